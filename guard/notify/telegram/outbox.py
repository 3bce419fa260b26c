"""The durable outbox: every outgoing Telegram call is a row before it is tried.

``enqueue`` writes the row (and the conversation-memory entry) in the caller's process, which
may be ``guard run`` or a CLI command; one ``OutboxWorker`` inside ``guard run`` sends rows in
order and marks them sent. So a Telegram outage, a 429 or a crash loses nothing: unsent rows are
sent when Telegram answers again, also after a restart.

Order matters (an edit must follow the message it edits), so the worker retries the oldest row
until it goes through (answers to refused users wait behind every other row, and the worker looks
again after each of them, so a stranger's flood never delays an incident alert): ``RetryAfter``
waits exactly as long as Telegram asks, network errors back off up to 10 s. A request Telegram
rejects (400/403) is marked failed and the queue moves on. Edits and replies name their incident,
not a message id, because the incident's message may not have been sent yet when they are queued;
the worker resolves it when it sends. Announcements that follow one another within
``group_wait`` go out as one grouped message (``grouping``). A message is posted at most once:
a send is committed in flight before the call, and one whose outcome a crash or a timeout left
unknown is looked for before it is sent again (``inflight``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

import httpx
from loguru import logger
from sqlalchemy import case, update
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session, col, select
from telegram import Bot, Message, ReplyParameters
from telegram.constants import ParseMode
from telegram.error import BadRequest, NetworkError, RetryAfter, TelegramError

from guard import cluster
from guard.crashpoints import reached
from guard.exceptions import NotLeader
from guard.memory.conversation import record_message
from guard.notify.telegram import grouping, inflight
from guard.notify.telegram.inflight import markup
from guard.notify.telegram.messages import CAPTION_LIMIT, Buttons, cut
from guard.records import utcnow
from guard.redact import redact
from guard.store.db import Database
from guard.store.models import (
    Incident,
    OutboxMessage,
    OutboxStatus,
    TelegramGroupMember,
    TelegramMessage,
)

IDLE = 0.3


def enqueue(
    db: Database,
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
    return enqueue_all(
        db,
        [
            {
                "method": method,
                "chat_id": chat_id,
                "text": text,
                "buttons": buttons,
                "incident_id": incident_id,
                "role": role,
                "reply_to_incident": reply_to_incident,
                "photo": photo,
            }
        ],
        also=also,
    )[0]


def enqueue_all(
    db: Database, calls: list[dict[str, Any]], also: Callable[[Session], object] | None = None
) -> list[int]:
    """Queue several calls (``enqueue``'s arguments) in one transaction: all or none, so a
    crash cannot queue a report without its chart. ``also`` runs first in that transaction
    (the gateway stores the update it answers there)."""
    rows = [
        OutboxMessage(
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
        ids = [add(session, row) for row in rows]
    for row, outbox_id in zip(rows, ids, strict=True):
        remember(db, row, outbox_id)
    return ids


def close_question(
    db: Database,
    *,
    chat_id: int | str,
    incident_id: int,
    text: str,
    only_message: int | None = None,
) -> int | None:
    """Queue the edit that ends an incident's question: its text says how, its buttons go.

    The message stops being live in the same transaction that queues the edit, so two closers
    (the agent reporting a heal, a button press, the sync noticing the question is over) cannot
    both queue one and the later overwrite who answered. With ``only_message`` (a
    ``TelegramMessage`` id) nothing is queued unless that message was still live.
    """
    with db.session() as session:
        queued = close_question_in(
            session,
            chat_id=chat_id,
            incident_id=incident_id,
            text=text,
            only_message=only_message,
        )
    if queued is None:
        return None
    remember(db, *queued)
    return queued[1]


def close_question_in(
    session: Session,
    *,
    chat_id: int | str,
    incident_id: int,
    text: str,
    only_message: int | None = None,
) -> tuple[OutboxMessage, int] | None:
    """``close_question`` in the caller's transaction: the queued row and its id (``remember``
    them after the commit), or None if ``only_message`` was no longer live."""
    row = OutboxMessage(
        method="edit", chat_id=str(chat_id), text=text, role="incident", incident_id=incident_id
    )
    if only_message is not None:
        flipped = session.execute(
            update(TelegramMessage)
            .where(col(TelegramMessage.id) == only_message, col(TelegramMessage.live))
            .values(live=False)
        )
        if getattr(flipped, "rowcount", 0) != 1:
            return None
    else:
        session.execute(
            update(TelegramMessage)
            .where(
                col(TelegramMessage.chat_id) == str(chat_id),
                col(TelegramMessage.incident_id) == incident_id,
                col(TelegramMessage.role) == "incident",
                col(TelegramMessage.live),
            )
            .values(live=False)
        )
    return row, add(session, row)


def add(session: Session, row: OutboxMessage) -> int:
    """Queue ``row`` in the caller's transaction (then ``remember`` it, after the commit)."""
    session.add(row)
    session.flush()
    assert row.id is not None
    cluster.current().claim(session, "telegram.queue", row.id)
    return row.id


def claim_send(db: Database, rows: list[OutboxMessage]) -> None:
    """Before a call to Telegram: raise ``NotLeader`` unless this replica's term still runs,
    and record the call with its fencing token."""
    with db.session() as session:
        for row in rows:
            cluster.current().claim(session, "telegram.send", row.id)


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


def incident_message(db: Database, chat_id: str, incident_id: int) -> TelegramMessage | None:
    """The newest message with buttons Guard sent about an incident in this chat: its own, or
    the grouped message it was announced in."""
    with db.session() as session:
        own = session.exec(
            select(TelegramMessage)
            .where(
                TelegramMessage.chat_id == chat_id,
                TelegramMessage.incident_id == incident_id,
                TelegramMessage.role == "incident",
            )
            .order_by(col(TelegramMessage.id).desc())
        ).first()
        member = grouping.member(session, chat_id, incident_id)
        if member is None:
            return own
        group = session.exec(
            select(TelegramMessage).where(
                TelegramMessage.chat_id == chat_id, TelegramMessage.message_id == member.message_id
            )
        ).first()
        if group is None or (
            own is not None and own.id is not None and group.id is not None and own.id > group.id
        ):
            return own
        return group


LOW_PRIORITY = ("refused",)  # answers to users who are not allowed: after everything else


def pending(db: Database, limit: int | None = None) -> list[OutboxMessage]:
    """Unsent rows (and rows in flight: sent, outcome unknown), incident alerts and everything
    else before answers to refused users, each group oldest first."""
    low = case((col(OutboxMessage.role).in_(LOW_PRIORITY), 1), else_=0)
    with db.session() as session:
        pending = select(OutboxMessage).where(
            col(OutboxMessage.status).in_((OutboxStatus.pending, OutboxStatus.in_flight))
        )
        return list(session.exec(pending.order_by(low, col(OutboxMessage.id)).limit(limit)).all())


class OutboxWorker:
    """Sends queued rows in order through ``bot`` until ``stop`` is set."""

    def __init__(self, bot: Bot, db: Database, *, group_wait: float = 0.0) -> None:
        self.bot = bot
        self.db = db
        self.wake = asyncio.Event()
        self.group_wait = group_wait
        self._announced_at = -float("inf")  # monotonic time of the last announcement

    async def run(self, stop: asyncio.Event) -> None:
        delay: float | None = 1.0
        while delay is not None and not stop.is_set():
            try:
                delay = await self._send_pending(stop, delay)
            except SQLAlchemyError as exc:  # the store is full, locked or away: wait, never die
                why = getattr(exc, "orig", None) or type(exc).__name__  # not the SQL: no texts
                logger.warning("telegram outbox: the store failed ({}); retrying in 5s", why)
                await self._sleep(stop, 5.0)

    async def _send_pending(self, stop: asyncio.Event, delay: float) -> float | None:
        """One pass over the pending rows; the network back-off to carry on with, or None when
        the outbox must stop."""
        rows = await asyncio.to_thread(pending, self.db)
        if not rows:
            await self._sleep(stop, IDLE)
            return delay
        for row in rows:
            if stop.is_set():
                return None
            try:
                if row.status == OutboxStatus.in_flight:
                    await self._recover(row)
                    return 1.0  # its group's other rows may have gone with it
                if grouping.is_ask(row) and self.group_wait > 0:
                    if await self._announce(row, stop):
                        break  # a group went out: rows of this snapshot were in it
                    continue
                await self._deliver(row)
                delay = 1.0
                if row.role in LOW_PRIORITY:
                    return delay  # look again: an alert queued meanwhile goes first
            except RetryAfter as exc:
                wait = _seconds(exc.retry_after)
                logger.warning(
                    "telegram asks Guard to wait {:g}s (429); outbox keeps {} message(s)",
                    wait,
                    len(rows),
                )
                await asyncio.to_thread(self._attempted, row, f"429: retry after {wait:g}s")
                await self._sleep(stop, wait)
                break
            except NetworkError as exc:  # also TimedOut; BadRequest is handled below
                if isinstance(exc, BadRequest):
                    await asyncio.to_thread(self._rejected, row, exc)
                    continue
                logger.warning("telegram unreachable ({}); retrying in {:g}s", exc, delay)
                uncertain = not isinstance(exc.__cause__, httpx.ConnectError)  # never sent
                await asyncio.to_thread(self._attempted, row, str(exc), uncertain=uncertain)
                await self._sleep(stop, delay)
                delay = min(delay * 2, 10.0)
                break
            except TelegramError as exc:  # Forbidden, a chat that went away...
                await asyncio.to_thread(self._rejected, row, exc)
            except NotLeader as exc:  # deposed: the new leader sends what is left
                logger.warning("outbox stops: {}", exc)
                return None
        return delay

    async def recover(self) -> None:
        """Settle the sends a crash left in flight (found, or sent again) before the gateway
        takes updates: a reply to such a message is then understood. Telegram failing here is
        not fatal: ``run`` tries again."""
        done: set[int | None] = set()
        while True:  # read again after each: a group's rows are settled together
            rows = await asyncio.to_thread(pending, self.db)
            row = next(
                (r for r in rows if r.status == OutboxStatus.in_flight and r.id not in done), None
            )
            if row is None:
                return
            done.add(row.id)
            try:
                await self._recover(row)
            except (TelegramError, NotLeader) as exc:
                logger.warning("telegram: a send in flight is settled later ({})", exc)
                return

    async def _recover(self, row: OutboxMessage) -> None:
        """Deliver a row whose send was in flight, with the rows sent in the same message."""
        record = await asyncio.to_thread(inflight.find, self.db, row)
        if record is None or len(record.outbox_ids) == 1:
            await self._deliver(row)
            return
        with self.db.session() as session:
            rows = list(
                session.exec(
                    select(OutboxMessage)
                    .where(col(OutboxMessage.id).in_(record.outbox_ids))
                    .order_by(col(OutboxMessage.id))
                ).all()
            )
        await self._deliver_group(rows)

    async def _announce(self, row: OutboxMessage, stop: asyncio.Event) -> bool:
        """Announce an incident: at once after a quiet spell, else with every announcement
        queued by the end of the ``group_wait`` window. True if it went out as a group."""
        window_end = self._announced_at + self.group_wait
        if time.monotonic() < window_end:
            await self._sleep(stop, window_end - time.monotonic())
            if stop.is_set():
                return False
            rows = await asyncio.to_thread(pending, self.db)
            group = grouping.batch(rows, row)
        else:
            group = [row]
        if len(group) == 1:
            await self._deliver(row)
        else:
            await self._deliver_group(group)
        self._announced_at = time.monotonic()
        return len(group) > 1

    async def _deliver_group(self, rows: list[OutboxMessage]) -> None:
        chat = rows[0].chat_id
        with self.db.session() as session:
            members = [
                TelegramGroupMember(
                    chat_id=chat,
                    message_id=0,
                    incident_id=r.incident_id,
                    text=grouping.member_line(session.get(Incident, r.incident_id), r.incident_id),
                    buttons=grouping.labelled(r.incident_id, r.buttons),
                )
                for r in rows
                if r.incident_id is not None
            ]
        text, buttons = grouping.render(members)
        message_id = await self._post(rows, text, buttons)
        ids = [m.incident_id for m in members]
        with self.db.session() as session:
            for old in session.exec(
                select(TelegramMessage).where(
                    col(TelegramMessage.incident_id).in_(ids),
                    TelegramMessage.chat_id == chat,
                    col(TelegramMessage.live),
                )
            ).all():
                old.live = False
                session.add(old)
            session.add(
                TelegramMessage(
                    chat_id=chat,
                    message_id=message_id,
                    incident_id=None,
                    role="group",
                    live=True,
                    approvals=[
                        d
                        for r in rows
                        for row in r.buttons
                        for _, d in row
                        if not d.startswith("fix:")
                    ],
                )
            )
            for m in members:
                m.message_id = message_id
                session.add(m)
            for r in rows:
                _sent(session, r)
            inflight.settle(session, rows, message_id)

    async def _edit_group(self, row: OutboxMessage, target: TelegramMessage) -> None:
        """One incident of a group is closed: its line says how, its buttons go."""
        assert row.incident_id is not None
        with self.db.session() as session:
            members = grouping.members_of(session, row.chat_id, target.message_id)
            for m in members:
                if m.incident_id == row.incident_id:
                    m.text = grouping.closed_line(
                        session.get(Incident, m.incident_id), m.incident_id, row.text
                    )
                    m.live = False
                    session.add(m)
        text, buttons = grouping.render(members)
        await asyncio.to_thread(claim_send, self.db, [row])
        try:
            await self.bot.edit_message_text(
                text,
                chat_id=row.chat_id,
                message_id=target.message_id,
                parse_mode=ParseMode.HTML,
                reply_markup=markup(buttons),
            )
        except BadRequest as exc:
            if "not modified" not in str(exc).lower():
                raise
        self._mark(row, OutboxStatus.sent)
        if not buttons:
            self._set_live(target, False)

    async def _sleep(self, stop: asyncio.Event, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), seconds)

    async def _deliver(self, row: OutboxMessage) -> None:
        chat = row.chat_id
        row.text = redact(row.text)  # the store keeps it redacted already; an exit checks again
        target = (
            incident_message(self.db, chat, row.incident_id)
            if row.incident_id is not None
            else None
        )
        keyboard = markup(row.buttons)
        if row.method == "edit":
            if target is None:
                self._mark(row, OutboxStatus.skipped, "no message to edit")
                return
            if target.role == "group":
                await self._edit_group(row, target)
                return
            await asyncio.to_thread(claim_send, self.db, [row])
            try:
                await self.bot.edit_message_text(
                    row.text,
                    chat_id=chat,
                    message_id=target.message_id,
                    parse_mode=ParseMode.HTML,
                    reply_markup=keyboard,
                )
            except BadRequest as exc:
                if "not modified" not in str(exc).lower():
                    raise
            self._mark(row, OutboxStatus.sent)
            if keyboard is None:
                self._set_live(target, False)
            return
        reply = (
            ReplyParameters(target.message_id, allow_sending_without_reply=True)
            if row.reply_to_incident and target is not None
            else None
        )
        message_id = await self._post([row], row.text, row.buttons, reply)
        with self.db.session() as session:
            if row.role == "incident" and row.incident_id is not None:
                for old in session.exec(
                    select(TelegramMessage).where(
                        TelegramMessage.incident_id == row.incident_id,
                        TelegramMessage.chat_id == chat,
                        col(TelegramMessage.live),
                    )
                ).all():
                    old.live = False
                    session.add(old)
            session.add(
                TelegramMessage(
                    chat_id=chat,
                    message_id=message_id,
                    incident_id=row.incident_id,
                    role=row.role,
                    live=keyboard is not None,
                    approvals=[d for r in row.buttons for _, d in r if not d.startswith("fix:")],
                )
            )
            _sent(session, row)
            inflight.settle(session, [row], message_id)

    async def _post(
        self,
        rows: list[OutboxMessage],
        text: str,
        buttons: list[Any],
        reply: ReplyParameters | None = None,
    ) -> int:
        """Post one message for ``rows`` and return its id, at most once: a send left in flight
        (Guard died after the call, or the call timed out) is looked for first (``inflight``)."""
        row = rows[0]
        record = await asyncio.to_thread(inflight.find, self.db, row)
        if record is not None:
            await asyncio.to_thread(claim_send, self.db, rows)
            found = await inflight.probe(self.bot, self.db, record)
            if found is not None:
                return found
        caption = cut(text, CAPTION_LIMIT) if row.method == "photo" else text
        await asyncio.to_thread(inflight.begin, self.db, rows, row.method, caption, buttons)
        msg: Message
        if row.method == "photo":
            msg = await self.bot.send_photo(
                row.chat_id,
                photo=row.photo or b"",
                caption=caption or None,
                parse_mode=ParseMode.HTML,
                reply_parameters=reply,
            )
        else:
            msg = await self.bot.send_message(
                row.chat_id,
                text,
                parse_mode=ParseMode.HTML,
                reply_markup=markup(buttons),
                reply_parameters=reply,
            )
        reached("report.sent_before_mark" if row.role == "report" else "telegram.sent_before_id")
        return msg.message_id

    def _mark(self, row: OutboxMessage, status: OutboxStatus, error: str = "") -> None:
        with self.db.session() as session:
            fresh = session.get(OutboxMessage, row.id)
            assert fresh is not None
            fresh.status, fresh.error, fresh.attempts = status, error, fresh.attempts + 1
            if status == OutboxStatus.sent:
                fresh.sent_at = utcnow()
            session.add(fresh)

    def _attempted(self, row: OutboxMessage, error: str, *, uncertain: bool = False) -> None:
        """The call failed; with ``uncertain`` (a network error) it may still have posted, so a
        send stays in flight and is looked for before it is tried again."""
        if not uncertain or row.method not in ("send", "photo"):
            inflight.drop(self.db, row)
            self._mark(row, OutboxStatus.pending, error)
            return
        with self.db.session() as session:
            fresh = session.get(OutboxMessage, row.id)
            assert fresh is not None
            fresh.error, fresh.attempts = error, fresh.attempts + 1
            session.add(fresh)

    def _rejected(self, row: OutboxMessage, exc: TelegramError) -> None:
        logger.error("telegram refused outbox message {} ({}): {}", row.id, row.method, exc)
        inflight.drop(self.db, row)
        self._mark(row, OutboxStatus.failed, str(exc))

    def _set_live(self, msg: TelegramMessage, live: bool) -> None:
        with self.db.session() as session:
            fresh = session.get(TelegramMessage, msg.id)
            if fresh is not None:
                fresh.live = live
                session.add(fresh)


def _sent(session: Session, row: OutboxMessage) -> None:
    fresh = session.get(OutboxMessage, row.id)
    assert fresh is not None
    fresh.status, fresh.sent_at, fresh.error = OutboxStatus.sent, utcnow(), ""
    fresh.attempts += 1
    session.add(fresh)


def _seconds(value: Any) -> float:
    total = getattr(value, "total_seconds", None)
    return float(total()) if callable(total) else float(value)
