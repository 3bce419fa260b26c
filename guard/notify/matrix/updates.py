"""Matrix's inbound adapter: an event of the room, as ``/sync`` gives it, as a neutral
``guard.notify.inbound.Inbound`` event, which the answers handle once (``Inbound.handled``).

Matrix has no buttons (``buttons``): a reaction (``m.reaction``, an ``m.annotation`` of one of
the bot's messages) is a press of the button its key names (any other reaction is people
talking, nothing to act on); a reply carrying one of the
message's codes is a press of that button; any other reply is text (maybe a fix), and a
message starting with ``/`` a command. The buttons are the bot's own message's
(``MatrixUpdate.shown``, read from the homeserver), never what the sender's event claims. The
bot's own events and edits are nothing to act on. A reply's fallback (the quoted lines
``> <@user:server> ...``) is not part of what was said.

An event's id is the message's id; its digest (``update_number``) the update's, which the store
keeps once handled: an event ``/sync`` gives again after a crash is skipped.

Tested by tests/matrix/test_matrix_updates.py and tests/notify/test_inbound_contract.py.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Literal

from guard.notify.inbound import Answer, Inbound
from guard.notify.matrix import buttons as kb
from guard.notify.matrix.channel import NAME


async def unanswered(text: str, alert: bool) -> None:
    """An update whose presses take no answer (a test's, a replay's)."""


@dataclass(frozen=True)
class MatrixUpdate:
    """One event of ``room`` (``event``: its JSON), with the buttons of the bot's message it
    reacts or replies to (``shown``) and how to answer a press there."""

    room: str
    event: dict[str, Any]
    bot: str = ""
    shown: list[kb.Button] = field(default_factory=list)
    answer: Answer = unanswered


def update_number(event_id: str) -> int:
    """The update id the store keeps for an event (a number): 63 bits of its id's digest."""
    return int.from_bytes(hashlib.sha256(event_id.encode()).digest()[:8], "big") >> 1


def target(event: dict[str, Any]) -> str | None:
    """The message an event reacts or replies to."""
    rel = event.get("content", {}).get("m.relates_to") or {}
    if not isinstance(rel, dict):
        return None
    if rel.get("rel_type") == "m.annotation":
        return str(rel.get("event_id") or "") or None
    quoted = rel.get("m.in_reply_to") or {}
    return str(quoted.get("event_id") or "") or None if isinstance(quoted, dict) else None


def said(body: str, replying: bool) -> str:
    """A message's own words: a reply's fallback quote taken off."""
    if not replying or not body.startswith("> "):
        return body.strip()
    lines = body.split("\n")
    while lines and lines[0].startswith("> "):
        lines.pop(0)
    return "\n".join(lines).strip()


def event(update: MatrixUpdate) -> Inbound | None:
    """What the event says a person did (a ``press``, a ``command`` or ``text``), or None."""
    ev = update.event
    sender = str(ev.get("sender") or "")
    if not sender or sender == update.bot or "event_id" not in ev:
        return None
    content = ev.get("content") or {}
    on = target(ev)
    common: dict[str, Any] = {
        "channel": NAME,
        "update_id": update_number(str(ev["event_id"])),
        "chat": update.room,
        "user": sender,
    }
    if ev.get("type") == "m.reaction":
        if on is None:
            return None
        data = kb.by_key(update.shown, str(content["m.relates_to"].get("key") or ""))
        if not data:
            return None  # a 👍, or a reaction to a message without buttons: talk, not a press
        return Inbound(**common, kind="press", message_id=on, data=data, answer=update.answer)
    if ev.get("type") != "m.room.message" or "m.new_content" in content:
        return None
    if content.get("msgtype") not in ("m.text", "m.notice"):
        return None
    text = said(str(content.get("body") or ""), on is not None)
    pressed = kb.by_code(update.shown, text) if on is not None else None
    if pressed is not None:
        return Inbound(**common, kind="press", message_id=on, data=pressed, answer=update.answer)
    kind: Literal["command", "text"] = "command" if text.startswith("/") else "text"
    return Inbound(**common, kind=kind, message_id=str(ev["event_id"]), text=text, reply_to=on)
