"""Posts whose outcome is unknown: found again through the channel, never posted twice.

A channel may have no idempotency key (a Bot API may have none). So before a post,
``begin`` commits the outbox rows as ``in_flight`` with an ``InFlight`` record: the exact text
(or caption) and buttons being posted, and a floor, the highest message id Guard knows in the
chat (``guard.notify.inbound.top``). The transaction that stores the message id removes the
record (``settle``). A record still there when the outbox picks its rows again (Guard died after
the call, or the call timed out) means the channel may have posted the message: the worker asks
the channel to ``find`` it above the floor before it posts again.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete
from sqlmodel import Session, col, select

from guard import cluster
from guard.notify import inbound
from guard.store.db import Database
from guard.store.models import InFlight, OutboxMessage, OutboxStatus


def find(db: Database, row: OutboxMessage) -> InFlight | None:
    """The unfinished post that carried ``row``, if any."""
    if row.status != OutboxStatus.in_flight:
        return None
    with db.session() as session:
        for record in session.exec(
            select(InFlight).where(InFlight.channel == row.channel, InFlight.chat_id == row.chat_id)
        ).all():
            if row.id in record.outbox_ids:
                return record
    return None


def begin(
    db: Database, rows: list[OutboxMessage], method: str, text: str, buttons: list[Any]
) -> InFlight:
    """Before the call: check this replica still leads (``NotLeader`` otherwise), record the
    call with its fencing token, and commit the rows as in flight with what is posted."""
    channel, chat = rows[0].channel, rows[0].chat_id
    ids = [r.id for r in rows if r.id is not None]
    with db.session() as session:
        _forget(session, channel, chat, ids)
        for row in rows:
            cluster.current().claim(session, "outbox.send", row.id)
            fresh = session.get(OutboxMessage, row.id)
            if fresh is not None:
                fresh.status = OutboxStatus.in_flight
                session.add(fresh)
        record = InFlight(
            channel=channel,
            chat_id=chat,
            outbox_ids=ids,
            method=method,
            text=text,
            buttons=buttons,
            floor=inbound.top(session, channel, chat),
        )
        session.add(record)
    return record


def settle(session: Session, rows: list[OutboxMessage], message_id: str) -> None:
    """In the transaction that stores the message id: the post is over."""
    if rows:
        channel, chat = rows[0].channel, rows[0].chat_id
        _forget(session, channel, chat, [r.id for r in rows if r.id is not None])
        inbound.raise_top(session, channel, chat, message_id)


def drop(db: Database, row: OutboxMessage) -> None:
    """The call certainly did not post (refused, asked to wait): nothing is in flight."""
    with db.session() as session:
        _forget(session, row.channel, row.chat_id, [row.id] if row.id is not None else [])


def known(db: Database, channel: str, chat: str) -> int:
    with db.session() as session:
        return inbound.top(session, channel, chat)


def _forget(session: Session, channel: str, chat: str, ids: list[int]) -> None:
    for record in session.exec(
        select(InFlight).where(InFlight.channel == channel, InFlight.chat_id == chat)
    ).all():
        if set(ids) & set(record.outbox_ids):
            session.execute(delete(InFlight).where(col(InFlight.id) == record.id))
