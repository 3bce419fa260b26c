"""The outbox's send worker: one per channel, sending that channel's rows in order.

So an outage, a rate limit or a crash loses nothing: unsent rows are sent when the channel
answers again, also after a restart. Order matters (an edit must follow the message it edits),
so the worker retries the oldest row until it goes through (answers to refused users wait behind
every other row, and the worker looks again after each of them, so a stranger's flood never
delays an incident alert): ``Retry`` waits exactly as long as the channel asks, network errors
back off up to 10 s. A call the channel rejects is marked failed and the queue moves on.
Announcements that follow one another within ``group_wait`` go out as one grouped message
(``grouping``). A message is posted at most once: a post is committed in flight before the
call, and one whose outcome a crash or a timeout left unknown is looked for (``Channel.find``)
before it is posted again (``inflight``). Rows of other channels are other workers' business:
one failing channel never holds up another. A row this process queues wakes the worker at once
(``wakeup``); rows other processes queued are found by its look every ``IDLE`` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from loguru import logger
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import col, select

from guard.domain.exceptions import NotLeader
from guard.harness.crashpoints import reached
from guard.notify.channel import Channel, Post, Rejected, Retry, Unreachable
from guard.notify.outbox import grouping, inflight, wakeup
from guard.notify.outbox.delivery import Delivery
from guard.notify.outbox.queue import LOW_PRIORITY, pending
from guard.store.db import Database
from guard.store.models import OutboxMessage, OutboxStatus

IDLE = 2.0  # seconds between looks when nothing woke the worker: rows other processes queued


class OutboxWorker:
    """Sends a channel's queued rows in order until ``stop`` is set (each row's calls:
    ``Delivery``, with this worker's at-most-once post)."""

    def __init__(self, channel: Channel, db: Database, *, group_wait: float = 0.0) -> None:
        self.channel = channel
        self.db = db
        self.delivery = Delivery(channel, db, self._post)
        self.wake = asyncio.Event()
        self.group_wait = group_wait
        self._announced_at = -float("inf")  # monotonic time of the last announcement

    def _pending(self) -> list[OutboxMessage]:
        return pending(self.db, self.channel.name)

    async def run(self, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()

        def woken() -> None:  # in the thread that committed a row for this channel
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits
                loop.call_soon_threadsafe(self.wake.set)

        unsubscribe = wakeup.subscribe(self.channel.name, woken)
        delay: float | None = 1.0
        try:
            while delay is not None and not stop.is_set():
                try:
                    delay = await self._send_pending(stop, delay)
                except SQLAlchemyError as exc:  # the store is full, locked or away: wait
                    why = getattr(exc, "orig", None) or type(exc).__name__  # not the SQL
                    logger.warning(
                        "{} outbox: the store failed ({}); retrying in 5s", self.channel.name, why
                    )
                    await self._sleep(stop, 5.0)
        finally:
            unsubscribe()

    async def _send_pending(self, stop: asyncio.Event, delay: float) -> float | None:
        """One pass over the pending rows; the network back-off to carry on with, or None when
        the outbox must stop."""
        self.wake.clear()  # before the look: a row committed after it wakes the next wait
        rows = await asyncio.to_thread(self._pending)
        if not rows:
            await self._idle(stop)
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
                await self.delivery.deliver(row)
                delay = 1.0
                if row.role in LOW_PRIORITY:
                    return delay  # look again: an alert queued meanwhile goes first
            except Retry as exc:
                logger.warning(
                    "{} asks Guard to wait {:g}s; outbox keeps {} message(s)",
                    self.channel.name,
                    exc.after,
                    len(rows),
                )
                why = f"429: retry after {exc.after:g}s"
                await asyncio.to_thread(self.delivery.attempted, row, why)
                await self._sleep(stop, exc.after)
                break
            except Unreachable as exc:
                logger.warning(
                    "{} unreachable ({}); retrying in {:g}s", self.channel.name, exc, delay
                )
                uncertain = exc.uncertain
                await asyncio.to_thread(self.delivery.attempted, row, str(exc), uncertain=uncertain)
                await self._sleep(stop, delay)
                delay = min(delay * 2, 10.0)
                break
            except Rejected as exc:
                await asyncio.to_thread(self.delivery.rejected, row, exc)
            except NotLeader as exc:  # deposed: the new leader sends what is left
                logger.warning("outbox stops: {}", exc)
                return None
        return delay

    async def recover(self) -> None:
        """Settle the posts a crash left in flight (found, or posted again) before the gateway
        takes updates: a reply to such a message is then understood. The channel failing here
        is not fatal: ``run`` tries again."""
        done: set[int | None] = set()
        while True:  # read again after each: a group's rows are settled together
            rows = await asyncio.to_thread(self._pending)
            row = next(
                (r for r in rows if r.status == OutboxStatus.in_flight and r.id not in done), None
            )
            if row is None:
                return
            done.add(row.id)
            try:
                await self._recover(row)
            except (Retry, Rejected, Unreachable, NotLeader) as exc:
                logger.warning("{}: a post in flight is settled later ({})", self.channel.name, exc)
                return

    async def _recover(self, row: OutboxMessage) -> None:
        """Deliver a row whose post was in flight, with the rows posted in the same message."""
        record = await asyncio.to_thread(inflight.find, self.db, row)
        if record is None or len(record.outbox_ids) == 1:
            await self.delivery.deliver(row)
            return
        with self.db.session() as session:
            rows = list(
                session.exec(
                    select(OutboxMessage)
                    .where(col(OutboxMessage.id).in_(record.outbox_ids))
                    .order_by(col(OutboxMessage.id))
                ).all()
            )
        await self.delivery.deliver_group(rows)

    async def _announce(self, row: OutboxMessage, stop: asyncio.Event) -> bool:
        """Announce an incident: at once after a quiet spell, else with every announcement
        queued by the end of the ``group_wait`` window. True if it went out as a group."""
        window_end = self._announced_at + self.group_wait
        if time.monotonic() < window_end:
            await self._sleep(stop, window_end - time.monotonic())
            if stop.is_set():
                return False
            rows = await asyncio.to_thread(self._pending)
            group = grouping.batch(rows, row, self.channel.markup.run_command)
        else:
            group = [row]
        if len(group) == 1:
            await self.delivery.deliver(row)
        else:
            await self.delivery.deliver_group(group)
        self._announced_at = time.monotonic()
        return len(group) > 1

    async def _idle(self, stop: asyncio.Event) -> None:
        """Wait for a row this process queues (``wakeup``), ``stop``, or ``IDLE`` seconds."""
        waits = {asyncio.ensure_future(stop.wait()), asyncio.ensure_future(self.wake.wait())}
        try:
            await asyncio.wait(waits, timeout=IDLE, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiting in waits:
                waiting.cancel()

    async def _sleep(self, stop: asyncio.Event, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), seconds)

    async def _post(self, rows: list[OutboxMessage], post: Post) -> str:
        """Post one message for ``rows`` and return its id, at most once: a post left in
        flight (Guard died after the call, or the call timed out) is looked for first."""
        row = rows[0]
        record = await asyncio.to_thread(inflight.find, self.db, row)
        if record is not None:
            await asyncio.to_thread(self.delivery.claim, rows)
            known = await asyncio.to_thread(inflight.known, self.db, row.channel, row.chat_id)
            was = Post(post.chat, record.text, record.buttons, post.photo, post.reply_to)
            found = await self.channel.find(was, record.floor, known)
            if found is not None:
                logger.info(
                    "{}: message {} is the one posted before the restart; not posting it again",
                    self.channel.name,
                    found,
                )
                return found
        await asyncio.to_thread(inflight.begin, self.db, rows, row.method, post.text, post.buttons)
        message_id = await self.channel.post(post)
        reached("report.sent_before_mark" if row.role == "report" else "outbox.sent_before_id")
        return message_id

    async def _deliver(self, row: OutboxMessage) -> None:
        """Deliver one row now (its calls, its marks)."""
        await self.delivery.deliver(row)
