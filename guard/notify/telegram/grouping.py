"""Grouped incident messages: several incidents, one Telegram message.

The first incident after a quiet spell is announced at once. Incidents announced within
``telegram.group_wait`` of it wait for that window to end and then go out together: one
message, one line and one row of buttons per incident (the labels say which incident). Like
Alertmanager's ``group_wait``/``group_interval``, a burst of faults is a few messages, not one
per fault.

Each incident of a group is a ``TelegramGroupMember`` row. An update to one of them (healed,
answered, expired) edits the group message: that incident's line says what became of it and
its buttons go; the message stops being live when none of its incidents has buttons left. A
human acts on one incident with its buttons, or by replying ``#ID FIX`` to the message. An
incident whose message offers a command (a model's proposal) is never grouped: a group's line
could not show the command whole, and its button would run what the line hid.
"""

from __future__ import annotations

import re

from sqlmodel import Session, col, select

from guard.notify.telegram.messages import LIMIT, RUN_COMMAND, STATE_LABEL, Buttons, cut, esc
from guard.store.db import Database
from guard.store.models import Incident, OutboxMessage, TelegramGroupMember, TelegramMessage

MAX_INCIDENTS = 20
MAX_BUTTONS = 100  # Telegram's limit for one inline keyboard
LINE_CHARS = 300
_NAMED = re.compile(r"\s*#?(\d{1,18})\b[\s:,-]*(.*)", re.DOTALL | re.ASCII)


def is_ask(row: OutboxMessage) -> bool:
    """Whether ``row`` announces an incident (the message with its buttons)."""
    return row.method == "send" and row.role == "incident" and row.incident_id is not None


def batch(rows: list[OutboxMessage], first: OutboxMessage) -> list[OutboxMessage]:
    """The pending announcements that go out with ``first`` (itself included), in order.
    One that offers a command goes alone: only its own message shows the command whole."""
    chosen = [first]
    if offers_command(first):
        return chosen
    buttons = sum(len(r) for r in first.buttons)
    for row in rows:
        if row.id == first.id or not is_ask(row) or row.chat_id != first.chat_id:
            continue
        if offers_command(row):
            continue
        size = sum(len(r) for r in row.buttons)
        if len(chosen) >= MAX_INCIDENTS or buttons + size > MAX_BUTTONS:
            break
        chosen.append(row)
        buttons += size
    return chosen


def offers_command(row: OutboxMessage) -> bool:
    return any(label == RUN_COMMAND for buttons in row.buttons for label, _ in buttons)


def member_line(incident: Incident | None, incident_id: int) -> str:
    if incident is None:
        return f"<b>#{incident_id}</b>"
    first = incident.message.splitlines()[0] if incident.message else ""
    return cut(
        f"<b>#{incident_id}</b> [{esc(incident.severity)}] {esc(incident.title)} · "
        f"seen {incident.count} times\n<code>{esc(first[:200])}</code>",
        LINE_CHARS,
    )


def closed_line(incident: Incident | None, incident_id: int, closed_html: str) -> str:
    """A member's line once its question is over: what the closing edit said, in one line."""
    title = esc(incident.title) if incident is not None else ""
    _, _, outcome = closed_html.partition("\n\n")
    outcome = " · ".join(part for part in outcome.splitlines() if part.strip())
    return cut(
        f"<s>#{incident_id}</s> {title}: {outcome or esc(STATE_LABEL['resolved'])}", LINE_CHARS
    )


def labelled(incident_id: int, buttons: Buttons) -> Buttons:
    """An incident's button rows with its id in front of each label."""
    return [[(f"#{incident_id} {label}"[:64], data) for label, data in row] for row in buttons]


def render(members: list[TelegramGroupMember]) -> tuple[str, Buttons]:
    """The group message's text and buttons."""
    live = sum(1 for m in members if m.live)
    head = (
        f"<b>{len(members)} incidents</b> opened together"
        + (f"; {live} still need a human" if live else "")
        + ".\n"
        "Use the buttons, or reply <code>#ID FIX</code> to send a fix for one."
    )
    text = _fit(head, [m.text for m in members], [m.incident_id for m in members])
    buttons: Buttons = [
        [(str(label), str(data)) for label, data in row]
        for m in members
        if m.live
        for row in m.buttons
    ]
    return text, buttons


def _fit(head: str, lines: list[str], ids: list[int]) -> str:
    """The head and every incident's line, if they fit in one message; else as many whole
    lines as fit and the ids of the rest, so no incident drops out of the text unnamed (their
    buttons are there either way)."""
    full = "\n\n".join([head, *lines])
    if len(full) <= LIMIT:
        return full
    for shown in range(len(lines) - 1, -1, -1):
        rest = ", ".join(f"#{i}" for i in ids[shown:])
        text = "\n\n".join([head, *lines[:shown]]) + f"\n\nAlso {rest}: see their buttons."
        if len(text) <= LIMIT:
            return text
    return cut(full)


def members_of(session: Session, chat_id: str, message_id: int) -> list[TelegramGroupMember]:
    return list(
        session.exec(
            select(TelegramGroupMember)
            .where(
                TelegramGroupMember.chat_id == chat_id, TelegramGroupMember.message_id == message_id
            )
            .order_by(col(TelegramGroupMember.id))
        ).all()
    )


def member(session: Session, chat_id: str, incident_id: int) -> TelegramGroupMember | None:
    """The newest group membership of an incident in a chat."""
    return session.exec(
        select(TelegramGroupMember)
        .where(
            TelegramGroupMember.chat_id == chat_id, TelegramGroupMember.incident_id == incident_id
        )
        .order_by(col(TelegramGroupMember.id).desc())
    ).first()


def group_reply(db: Database, message: TelegramMessage, text: str) -> tuple[int, str] | None:
    """``(incident id, fix)`` of a reply ``#ID FIX`` to a grouped message, if ``ID`` is one of
    its incidents and a fix follows."""
    named = _NAMED.match(text)
    if named is None or not named.group(2).strip():
        return None
    incident_id = int(named.group(1))
    with db.session() as session:
        members = members_of(session, message.chat_id, message.message_id)
    if incident_id not in {m.incident_id for m in members}:
        return None
    return incident_id, named.group(2).strip()
