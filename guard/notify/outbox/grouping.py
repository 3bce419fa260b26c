"""Grouped incident messages: several incidents, one message, in any channel.

The first incident after a quiet spell is announced at once. Incidents announced within
``group_wait`` of it wait for that window to end and then go out together: one message, one
line and one row of buttons per incident (the labels say which incident). Like Alertmanager's
``group_wait``/``group_interval``, a burst of faults is a few messages, not one per fault.

Each incident of a group is a ``MessageGroupMember`` row. An update to one of them (healed,
answered, expired) edits the group message: that incident's line says what became of it and
its buttons go; the message stops being live when none of its incidents has buttons left. A
human acts on one incident with its buttons, or by replying ``#ID FIX`` to the message. An
incident whose message offers a command (a model's proposal) is never grouped: a group's line
could not show the command whole, and its button would run what the line hid. The channel's
``Markup`` renders the lines and the message.
"""

from __future__ import annotations

import re

from sqlmodel import Session, col, select

from guard.notify.channel import Buttons
from guard.store.db import Database
from guard.store.models import ChannelMessage, MessageGroupMember, OutboxMessage

MAX_INCIDENTS = 20
MAX_BUTTONS = 100  # buttons on one message at most (the tightest channel's limit for a keyboard)
_NAMED = re.compile(r"\s*#?(\d{1,18})\b[\s:,-]*(.*)", re.DOTALL | re.ASCII)


def is_ask(row: OutboxMessage) -> bool:
    """Whether ``row`` announces an incident (the message with its buttons)."""
    return row.method == "send" and row.role == "incident" and row.incident_id is not None


def batch(rows: list[OutboxMessage], first: OutboxMessage, run_command: str) -> list[OutboxMessage]:
    """The pending announcements that go out with ``first`` (itself included), in order.
    One that offers a command (a ``run_command`` button) goes alone: only its own message shows
    the command whole."""
    chosen = [first]
    if offers_command(first, run_command):
        return chosen
    buttons = sum(len(r) for r in first.buttons)
    for row in rows:
        if row.id == first.id or not is_ask(row) or row.chat_id != first.chat_id:
            continue
        if offers_command(row, run_command):
            continue
        size = sum(len(r) for r in row.buttons)
        if len(chosen) >= MAX_INCIDENTS or buttons + size > MAX_BUTTONS:
            break
        chosen.append(row)
        buttons += size
    return chosen


def offers_command(row: OutboxMessage, run_command: str) -> bool:
    return any(label == run_command for buttons in row.buttons for label, _ in buttons)


def labelled(incident_id: int, buttons: Buttons) -> Buttons:
    """An incident's button rows with its id in front of each label."""
    return [[(f"#{incident_id} {label}"[:64], data) for label, data in row] for row in buttons]


def approvals(buttons: list[list[tuple[str, str]]] | list[object]) -> list[str]:
    """The approval codes behind buttons (their data, bar the "send a fix" prompts)."""
    return [str(d) for row in buttons for _, d in row if not str(d).startswith("fix:")]  # type: ignore[attr-defined]


def live_buttons(members: list[MessageGroupMember]) -> Buttons:
    """A group message's buttons: those of its incidents whose question is still open."""
    return [
        [(str(label), str(data)) for label, data in row]
        for m in members
        if m.live
        for row in m.buttons
    ]


def members_of(
    session: Session, channel: str, chat_id: str, message_id: str
) -> list[MessageGroupMember]:
    return list(
        session.exec(
            select(MessageGroupMember)
            .where(
                MessageGroupMember.channel == channel,
                MessageGroupMember.chat_id == chat_id,
                MessageGroupMember.message_id == message_id,
            )
            .order_by(col(MessageGroupMember.id))
        ).all()
    )


def member(
    session: Session, channel: str, chat_id: str, incident_id: int
) -> MessageGroupMember | None:
    """The newest group membership of an incident in a chat."""
    return session.exec(
        select(MessageGroupMember)
        .where(
            MessageGroupMember.channel == channel,
            MessageGroupMember.chat_id == chat_id,
            MessageGroupMember.incident_id == incident_id,
        )
        .order_by(col(MessageGroupMember.id).desc())
    ).first()


def group_reply(db: Database, message: ChannelMessage, text: str) -> tuple[int, str] | None:
    """``(incident id, fix)`` of a reply ``#ID FIX`` to a grouped message, if ``ID`` is one of
    its incidents and a fix follows."""
    named = _NAMED.match(text)
    if named is None or not named.group(2).strip():
        return None
    incident_id = int(named.group(1))
    with db.session() as session:
        members = members_of(session, message.channel, message.chat_id, message.message_id)
    if incident_id not in {m.incident_id for m in members}:
        return None
    return incident_id, named.group(2).strip()
