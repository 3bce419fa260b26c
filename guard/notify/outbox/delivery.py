"""Delivering one row (or one group of announcements) through a channel, and marking it.

The worker (``guard.notify.outbox.worker``) decides what to send when; this part turns a row into
the channel's calls: an edit of the incident's message (its own, or its line in a group), a
post (in the incident's thread for a reply), and the bookkeeping of what was posted
(``ChannelMessage``, group members, the row's status) in the transaction that ends its flight.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from loguru import logger
from sqlmodel import Session, col, select

from guard.domain.records import utcnow
from guard.harness.crashpoints import reached
from guard.notify.channel import Channel, Post
from guard.notify.outbox import grouping, inflight, targets
from guard.notify.outbox.queue import claim_send, incident_message
from guard.notify.relatedline import member_text
from guard.redact import redact
from guard.store.db import Database
from guard.store.models import (
    ChannelMessage,
    Incident,
    MessageGroupMember,
    OutboxMessage,
    OutboxStatus,
)

PostOnce = Callable[[list[OutboxMessage], Post], Awaitable[str]]
"""Posts one message for rows and returns its id, at most once (the worker's)."""


class Delivery:
    """A channel's calls for the rows of its outbox; ``post`` posts at most once."""

    def __init__(self, channel: Channel, db: Database, post: PostOnce) -> None:
        self.channel = channel
        self.db = db
        self._post = post

    def claim(self, rows: list[OutboxMessage]) -> None:
        claim_send(self.db, rows)

    async def deliver(self, row: OutboxMessage) -> None:
        chat, name = row.chat_id, self.channel.name
        row.text = redact(row.text)  # the store keeps it redacted already; an exit checks again
        target = (
            incident_message(self.db, name, chat, row.incident_id)
            if row.incident_id is not None
            else None
        )
        if row.method == "edit":
            target = self._edited(row, target)
            if target is None:
                self._mark(row, OutboxStatus.skipped, "no message to edit")
                return
            if target.role == "group":
                await self._edit_group(row, target)
                return
            await asyncio.to_thread(self.claim, [row])
            await self.channel.edit(chat, target.message_id, row.text, _buttons(row.buttons))
            reached("outbox.edited_before_mark")
            self._mark(row, OutboxStatus.sent)
            if not row.buttons:
                self._set_live(target, False)
            return
        reply = target.message_id if row.reply_to_incident and target is not None else None
        photo = (row.photo or b"") if row.method == "photo" else None
        post = Post(chat, row.text, _buttons(row.buttons), photo, reply)
        message_id = await self._post([row], post)
        with self.db.session() as session:
            if row.role == "incident" and row.incident_id is not None:
                self._retire(session, chat, [row.incident_id])
            message = ChannelMessage(
                channel=name,
                chat_id=chat,
                message_id=message_id,
                incident_id=row.incident_id,
                role=row.role,
                live=bool(row.buttons),
                approvals=grouping.approvals(row.buttons),
            )
            session.add(message)
            targets.posted(session, [row], message)
            _sent(session, row)
            inflight.settle(session, [row], message_id)

    async def deliver_group(self, rows: list[OutboxMessage]) -> None:
        chat, name = rows[0].chat_id, self.channel.name
        markup = self.channel.markup
        with self.db.session() as session:
            members = [
                MessageGroupMember(
                    channel=name,
                    chat_id=chat,
                    message_id="",  # set once posted
                    incident_id=r.incident_id,
                    text=member_text(
                        markup.member_line(session.get(Incident, r.incident_id), r.incident_id),
                        r.text,
                    ),
                    buttons=grouping.labelled(r.incident_id, _buttons(r.buttons)),
                )
                for r in rows
                if r.incident_id is not None
            ]
        text, buttons = markup.group(members)
        message_id = await self._post(rows, Post(chat, text, buttons))
        with self.db.session() as session:
            self._retire(session, chat, [m.incident_id for m in members])
            group = ChannelMessage(
                channel=name,
                chat_id=chat,
                message_id=message_id,
                incident_id=None,
                role="group",
                live=True,
                approvals=[a for r in rows for a in grouping.approvals(r.buttons)],
            )
            session.add(group)
            targets.posted(session, rows, group)
            for m in members:
                m.message_id = message_id
                session.add(m)
            for r in rows:
                _sent(session, r)
            inflight.settle(session, rows, message_id)

    def _edited(self, row: OutboxMessage, newest: ChannelMessage | None) -> ChannelMessage | None:
        """The message an edit was queued for; ``newest`` for a row queued by an older
        release, which named only its incident."""
        with self.db.session() as session:
            named = targets.target(session, row)
        return newest if isinstance(named, bool) else named

    def _retire(self, session: Session, chat: str, incident_ids: list[int]) -> None:
        """Older messages about these incidents stop being live: a new one asks now."""
        for old in session.exec(
            select(ChannelMessage).where(
                ChannelMessage.channel == self.channel.name,
                col(ChannelMessage.incident_id).in_(incident_ids),
                ChannelMessage.chat_id == chat,
                col(ChannelMessage.live),
            )
        ).all():
            old.live = False
            session.add(old)

    async def _edit_group(self, row: OutboxMessage, target: ChannelMessage) -> None:
        """One incident of a group changed. Closed (an edit without buttons): its line says
        how, its buttons go. Still asking (its related signals changed): its line again, with
        the question's related line, its buttons kept."""
        assert row.incident_id is not None
        markup = self.channel.markup
        with self.db.session() as session:
            members = grouping.members_of(session, target.channel, row.chat_id, target.message_id)
            for m in members:
                if m.incident_id == row.incident_id:
                    incident = session.get(Incident, m.incident_id)
                    if row.buttons and m.live:
                        m.text = member_text(markup.member_line(incident, m.incident_id), row.text)
                    else:
                        m.text = markup.closed_line(incident, m.incident_id, row.text)
                        m.live = False
                    session.add(m)
        text, buttons = markup.group(members)
        await asyncio.to_thread(self.claim, [row])
        await self.channel.edit(row.chat_id, target.message_id, text, buttons)
        self._mark(row, OutboxStatus.sent)
        if not buttons:
            self._set_live(target, False)

    def _mark(self, row: OutboxMessage, status: OutboxStatus, error: str = "") -> None:
        with self.db.session() as session:
            fresh = session.get(OutboxMessage, row.id)
            assert fresh is not None
            fresh.status, fresh.error, fresh.attempts = status, error, fresh.attempts + 1
            if status == OutboxStatus.sent:
                fresh.sent_at = utcnow()
            session.add(fresh)

    def attempted(self, row: OutboxMessage, error: str, *, uncertain: bool = False) -> None:
        """The call failed; with ``uncertain`` (a network error) it may still have posted, so a
        post stays in flight and is looked for before it is tried again."""
        if not uncertain or row.method not in ("send", "photo"):
            inflight.drop(self.db, row)
            self._mark(row, OutboxStatus.pending, error)
            return
        with self.db.session() as session:
            fresh = session.get(OutboxMessage, row.id)
            assert fresh is not None
            fresh.error, fresh.attempts = error, fresh.attempts + 1
            session.add(fresh)

    def rejected(self, row: OutboxMessage, exc: Exception) -> None:
        logger.error(
            "{} refused outbox message {} ({}): {}", self.channel.name, row.id, row.method, exc
        )
        inflight.drop(self.db, row)
        self._mark(row, OutboxStatus.failed, str(exc))

    def _set_live(self, msg: ChannelMessage, live: bool) -> None:
        with self.db.session() as session:
            fresh = session.get(ChannelMessage, msg.id)
            if fresh is not None:
                fresh.live = live
                session.add(fresh)


def _buttons(rows: list[object]) -> list[list[tuple[str, str]]]:
    return [[(str(label), str(data)) for label, data in row] for row in rows]  # type: ignore[attr-defined]


def _sent(session: Session, row: OutboxMessage) -> None:
    fresh = session.get(OutboxMessage, row.id)
    assert fresh is not None
    fresh.status, fresh.sent_at, fresh.error = OutboxStatus.sent, utcnow(), ""
    fresh.attempts += 1
    session.add(fresh)
