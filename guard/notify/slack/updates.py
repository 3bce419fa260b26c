"""Slack's inbound adapter: what Slack delivered (a Socket Mode envelope's ``type`` and
``payload``, or the same payload posted to the HTTP endpoint) as a neutral
``guard.notify.inbound.Inbound`` event, which the answers handle once.

- ``interactive`` ``block_actions``: a ``press`` of the button whose ``value`` is the data, on
  the message ``container.message_ts``; answered at once with ``chat.postEphemeral`` (only the
  presser sees it);
- ``events_api`` ``message`` (a person's, not a bot's, not an edit; a thread reply also sent
  to the channel counts): ``text``, a reply when it is in a thread (``thread_ts``: the
  message it hangs under); Slack's escapes are undone;
- ``slash_commands``: ``/guard ack 3`` (the one command the manifest registers) is the command
  ``/ack 3``; a command registered by its own name (``/ack 3``) is itself.

Slack delivers again what was not acked in time (``retry_attempt``). The update id is stable
across deliveries: the event's ``event_id``, the press's ``action_ts`` on its message, the slash
command's ``trigger_id``; so a delivery handled before is skipped.

Tested by tests/notify/test_inbound_contract.py.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from guard.notify.inbound import Inbound

NAME = "slack"
ANSWER_CHARS = 3000
GUARD_COMMAND = "guard"
BROADCAST = "thread_broadcast"  # a thread reply also sent to the channel: still a reply
_MENTION = re.compile(r"^\s*<@[A-Z0-9]+>\s*")


@dataclass(frozen=True)
class Delivery:
    """One thing Slack delivered: its kind (Socket Mode's envelope type), its payload, and the
    client to answer a press with."""

    kind: str
    payload: dict[str, Any]
    web: AsyncWebClient | None = None


def update_id(*parts: object) -> int:
    """A stable number for a delivery (the store keys handled updates by number)."""
    raw = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(raw[:8], "big") >> 1


def unescape(text: str) -> str:
    """A person's text as typed (Slack sends ``&``, ``<``, ``>`` as entities)."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def event(d: Delivery) -> Inbound | None:
    """What the delivery says a person did; None for anything else (a bot's message, an edit)."""
    if d.kind == "interactive":
        return _press(d)
    if d.kind == "slash_commands":
        return _slash(d.payload)
    if d.kind == "events_api":
        return _message(d.payload)
    return None


def _press(d: Delivery) -> Inbound | None:
    p = d.payload
    actions = p.get("actions") or []
    if p.get("type") != "block_actions" or not actions:
        return None
    action = actions[0]
    container = p.get("container") or {}
    chat = container.get("channel_id") or (p.get("channel") or {}).get("id")
    ts = container.get("message_ts")
    user = (p.get("user") or {}).get("id")
    web = d.web

    async def answer(text: str, alert: bool) -> None:
        if web is not None and chat and user:
            await web.chat_postEphemeral(channel=chat, user=user, text=text[:ANSWER_CHARS])

    return Inbound(
        channel=NAME,
        update_id=update_id("press", user, ts, action.get("action_ts")),
        kind="press",
        chat=chat,
        user=user,
        message_id=ts or None,
        data=str(action.get("value") or ""),
        answer=answer,
    )


def _slash(p: dict[str, Any]) -> Inbound:
    name = str(p.get("command", "")).lstrip("/")
    words = str(p.get("text", "")).strip()
    text = f"/{words}" if name == GUARD_COMMAND else f"/{name} {words}".strip()
    return Inbound(
        channel=NAME,
        update_id=update_id("slash", p.get("trigger_id")),
        kind="command",
        chat=p.get("channel_id"),
        user=p.get("user_id"),
        text=text if text != "/" else "/help",
    )


def _message(p: dict[str, Any]) -> Inbound | None:
    e = p.get("event") or {}
    if e.get("type") != "message" or e.get("subtype", BROADCAST) != BROADCAST or e.get("bot_id"):
        return None
    ts, thread = e.get("ts"), e.get("thread_ts")
    text = unescape(_MENTION.sub("", str(e.get("text", ""))))
    return Inbound(
        channel=NAME,
        update_id=update_id("event", p.get("event_id") or ts),
        kind="command" if text.startswith("/") else "text",
        chat=e.get("channel"),
        user=e.get("user"),
        message_id=ts or None,
        text=text,
        reply_to=thread if thread and thread != ts else None,
    )
