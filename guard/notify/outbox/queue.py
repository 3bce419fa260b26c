"""The outbox's queue API: every outgoing call to a channel is a row before it is tried.

``enqueue`` writes the row (and the conversation-memory entry) in the caller's process, which
may be ``guard run`` or a CLI command; one worker per channel inside ``guard run`` sends that
channel's rows in order (``guard.notify.outbox.worker``). Every function names its ``channel``:
each channel has its own rows, its own order and its own delivery state.

Replies name their incident, not a message id, because the incident's message may not have been
sent yet when they are queued; the worker resolves it when it sends. An edit also names the
message it was made for, fixed when it is queued (``targets``): the message, or the row of its
post not sent yet; the incident's newer questions are not its business.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import case, update
from sqlmodel import Session, col, select

from guard import cluster
from guard.memory.conversation import record_message
from guard.notify.channel import Buttons
from guard.notify.outbox import grouping, targets
from guard.store.db import Database
from guard.store.models import ChannelMessage, OutboxMessage, OutboxStatus

LOW_PRIORITY = ("refused",)  # answers to users who are not allowed: after everything else


def enqueue(
    db: Database,
    channel: str,
    *,
    method: str,
    chat_id: int | str,
    text: str = "",
    buttons: Buttons | None = None,
    incident_id: int | None = None,
    role: str = "text",
    reply_to_incident: bool = False,
    photo: bytes | None = None,
    also: Callable[[Session], object] | None = None,
) -> int:
    """Queue one call (``send``, ``edit`` or ``photo``) and remember it in the conversation."""
    call = {
        "method": method,
        "chat_id": chat_id,
        "text": text,
        "buttons": buttons,
        "incident_id": incident_id,
        "role": role,
        "reply_to_incident": reply_to_incident,
        "photo": photo,
    }
    return enqueue_all(db, channel, [call], also=also)[0]


def enqueue_all(
    db: Database,
    channel: str,
    calls: list[dict[str, Any]],
    also: Callable[[Session], object] | None = None,
) -> list[int]:
    """Queue several calls (``enqueue``'s arguments) in one transaction: all or none, so a
    crash cannot queue a report without its chart. ``also`` runs first in that transaction
    (a gateway stores the update it answers there)."""
    rows = [
        OutboxMessage(
            channel=channel,
            method=c["method"],
            chat_id=str(c["chat_id"]),
            text=c.get("text", ""),
            role=c.get("role", "text"),
            buttons=[[list(b) for b in r] for r in c.get("buttons") or []],
            incident_id=c.get("incident_id"),
            reply_to_incident=c.get("reply_to_incident", False),
            photo=c.get("photo"),
        )
        for c in calls
    ]
    with db.session() as session:
        if also is not None:
            also(session)
        ids = [add(session, row, channel) for row in rows]
    for row, outbox_id in zip(rows, ids, strict=True):
        remember(db, row, outbox_id)
    return ids


def close_question(
    db: Database,
    channel: str,
    *,
    chat_id: int | str,
    incident_id: int,
    text: str,
    only_message: int | None = None,
    message: int | None = None,
) -> int | None:
    """Queue the edit that ends an incident's question: its text says how, its buttons go.

    The message stops being live in the same transaction that queues the edit, so two closers
    (the agent reporting a heal, a button press, the sync noticing the question is over) cannot
    both queue one and the later overwrite who answered. With ``only_message`` (a
    ``ChannelMessage`` id) nothing is queued unless that message was still live. The edit
    edits ``only_message``, else ``message`` (a group the sync saw), else the incident's newest
    question now (``targets``).
    """
    with db.session() as session:
        queued = close_question_in(
            session,
            channel,
            chat_id=chat_id,
            incident_id=incident_id,
            text=text,
            only_message=only_message,
            message=message,
        )
    if queued is None:
        return None
    remember(db, *queued)
    return queued[1]


def close_question_in(
    session: Session,
    channel: str,
    *,
    chat_id: int | str,
    incident_id: int,
    text: str,
    only_message: int | None = None,
    message: int | None = None,
) -> tuple[OutboxMessage, int] | None:
    """``close_question`` in the caller's transaction: the queued row and its id (``remember``
    them after the commit), or None if ``only_message`` was no longer live."""
    row = OutboxMessage(
        channel=channel,
        method="edit",
        chat_id=str(chat_id),
        text=text,
        role="incident",
        incident_id=incident_id,
    )
    if only_message is not None:
        flipped = session.execute(
            update(ChannelMessage)
            .where(col(ChannelMessage.id) == only_message, col(ChannelMessage.live))
            .values(live=False)
        )
        if getattr(flipped, "rowcount", 0) != 1:
            return None
    else:
        session.execute(
            update(ChannelMessage)
            .where(
                col(ChannelMessage.channel) == channel,
                col(ChannelMessage.chat_id) == str(chat_id),
                col(ChannelMessage.incident_id) == incident_id,
                col(ChannelMessage.role) == "incident",
                col(ChannelMessage.live),
            )
            .values(live=False)
        )
    return row, add(session, row, channel, edits=only_message or message)


def add(
    session: Session, row: OutboxMessage, channel: str | None = None, edits: int | None = None
) -> int:
    """Queue ``row`` in the caller's transaction (then ``remember`` it, after the commit). An
    edit edits ``edits`` (a ``ChannelMessage`` id), else its incident's newest question now."""
    if channel is not None:
        row.channel = channel
    session.add(row)
    session.flush()
    assert row.id is not None
    cluster.current().claim(session, "outbox.queue", row.id)
    if row.method == "edit" and row.incident_id is not None:
        targets.fix(session, row, edits, incident_message_in)
    return row.id


def claim_send(db: Database, rows: list[OutboxMessage]) -> None:
    """Before a call to a channel: raise ``NotLeader`` unless this replica's term still runs,
    and record the call with its fencing token."""
    with db.session() as session:
        for row in rows:
            cluster.current().claim(session, "outbox.send", row.id)


def remember(db: Database, row: OutboxMessage, outbox_id: int) -> None:
    """Keep a queued row in conversation memory."""
    record_message(
        db,
        chat=row.chat_id,
        direction="out",
        author="guard",
        text=row.text,
        incident_id=row.incident_id,
        outbox=outbox_id,
        method=row.method,
        role=row.role,
    )


def incident_message(
    db: Database, channel: str, chat_id: str, incident_id: int
) -> ChannelMessage | None:
    """The newest message with buttons Guard sent about an incident in this chat: its own, or
    the grouped message it was announced in."""
    with db.session() as session:
        return incident_message_in(session, channel, chat_id, incident_id)


def incident_message_in(
    session: Session, channel: str, chat_id: str, incident_id: int
) -> ChannelMessage | None:
    """``incident_message`` in the caller's transaction."""
    own = session.exec(
        select(ChannelMessage)
        .where(
            ChannelMessage.channel == channel,
            ChannelMessage.chat_id == chat_id,
            ChannelMessage.incident_id == incident_id,
            ChannelMessage.role == "incident",
        )
        .order_by(col(ChannelMessage.id).desc())
    ).first()
    member = grouping.member(session, channel, chat_id, incident_id)
    if member is None:
        return own
    group = session.exec(
        select(ChannelMessage).where(
            ChannelMessage.channel == channel,
            ChannelMessage.chat_id == chat_id,
            ChannelMessage.message_id == member.message_id,
        )
    ).first()
    if group is None or (
        own is not None and own.id is not None and group.id is not None and own.id > group.id
    ):
        return own
    return group


def pending(db: Database, channel: str, limit: int | None = None) -> list[OutboxMessage]:
    """A channel's unsent rows (and rows in flight: sent, outcome unknown), incident alerts and
    everything else before answers to refused users, each group oldest first."""
    low = case((col(OutboxMessage.role).in_(LOW_PRIORITY), 1), else_=0)
    with db.session() as session:
        rows = select(OutboxMessage).where(
            OutboxMessage.channel == channel,
            col(OutboxMessage.status).in_((OutboxStatus.pending, OutboxStatus.in_flight)),
        )
        return list(session.exec(rows.order_by(low, col(OutboxMessage.id)).limit(limit)).all())


def last_sent(db: Database, channel: str, incident_id: int, role: str, after: int = 0) -> int:
    """The id of the newest row of ``role`` about an incident that the channel sent (newer
    than the row ``after``), or 0."""
    with db.session() as session:
        found = session.exec(
            select(OutboxMessage.id)
            .where(
                OutboxMessage.channel == channel,
                OutboxMessage.incident_id == incident_id,
                OutboxMessage.role == role,
                OutboxMessage.status == OutboxStatus.sent,
                col(OutboxMessage.id) > after,
            )
            .order_by(col(OutboxMessage.id).desc())
        ).first()
    return found or 0


def asked_in(db: Database, channel: str, incident_id: int, default: str) -> list[str]:
    """The chats a channel asked about an incident in (``routes:`` may name several), or
    ``[default]`` if it asked nowhere."""
    with db.session() as session:
        found = session.exec(
            select(OutboxMessage.chat_id)
            .where(
                OutboxMessage.channel == channel,
                OutboxMessage.incident_id == incident_id,
                OutboxMessage.role == "incident",
            )
            .distinct()
        ).all()
    return sorted(found) or [default]
