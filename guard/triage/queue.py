"""Triage intake: every monitor's observations through one bounded queue into the store.

Monitors and streams put ``Observation``s on the queue; one consumer applies them in batches,
so database writes are serialised and a log storm costs one transaction per batch, not one per
line. While the store is unavailable (locked, full, Postgres away) a batch is retried until it
is stored, and the queue fills up to its bound, so the checks wait instead of piling up in
memory. A batch that fails for any other reason is given up after 3 tries, so it cannot hold
up every later one. Batches are stored on a thread of their own, so a signal never waits for a
worker thread that the agent or the monitors hold (a recall waiting for the memory helper).

Routine observations (passing checks, a log file's new position with no match) wait up to
``ROUTINE_WAIT`` for company, so a thousand healthy monitors cost a few transactions a second,
not one per ``BATCH_EVERY``; news (a failing signal) never waits for it.

``submit`` is the same path for a sender that must know its observation is stored (a hook
answers 2xx only then): it waits, boundedly, for the transaction that holds it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from loguru import logger
from sqlalchemy.exc import OperationalError

from guard.domain.exceptions import NotLeader
from guard.domain.records import Observation
from guard.util.pacing import Pace

BATCH = 500
BATCH_SIGNALS = 250  # a batch closes at this many signals: one transaction holds the store's
# write lock for a bounded time (a hook's notification can carry hundreds of alerts), so a
# /healthz write or a check's state waits at most one short transaction
QUEUE_BOUND = 10_000  # observations waiting for triage
BATCH_EVERY = 0.05  # seconds: at most one triage transaction per this long while busy
BURST = 3  # transactions that may follow one another at once after a quiet spell
TRIES = 3  # for a batch that fails for another reason than an unavailable store
ROUTINE_WAIT = 0.5  # seconds a batch of routine observations waits for more (news: none)

Apply = Callable[[list[Observation]], Any]


def is_news(obs: Observation) -> bool:
    """Whether ``obs`` says something is wrong (a firing signal): it is stored at once. The
    rest (passing checks, positions) is routine: it may wait for company (``ROUTINE_WAIT``);
    a pass is dated when observed, so what it resolves is dated right however late it lands."""
    return any(s.status != "ok" for s in obs.signals)


def lanes(batch: list[Observation]) -> list[list[Observation]]:
    """``batch`` as the transactions to store it in: the observations that carry log lines
    (grouped signals, saved positions) after the others, in a transaction of their own, so a
    kill's ``die`` is not stored behind a storm's lines and their template mining. Without
    news among the others (passing checks) nothing waits on the lines: one transaction."""
    others: list[Observation] = []
    lines: list[Observation] = []
    for o in batch:
        carries = bool(o.state) or any(s.grouping is not None for s in o.signals)
        (lines if carries else others).append(o)
    split = others and lines and any(map(is_news, others))
    return [others, lines] if split else [batch]


class Intake:
    """The queue in front of triage, and its one consumer."""

    def __init__(
        self,
        apply: Apply,
        *,
        forget: Callable[[str], object],
        stopping: Callable[[], bool],
    ) -> None:
        self._apply = apply  # stores a batch (blocking: run on a thread)
        self._forget = forget  # drops a monitor's state in memory: re-read from the store
        self._stopping = stopping
        self.queue: asyncio.Queue[Observation] = asyncio.Queue(QUEUE_BOUND)
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="triage")
        self._waiting: dict[int, asyncio.Future[bool]] = {}  # id(observation) -> stored?
        self._news = asyncio.Event()  # news queued: a routine batch stops waiting for company
        self._held: list[Observation] = []  # taken from the queue, not yet being stored
        self.consuming = False

    async def submit(self, obs: Observation, wait: float) -> bool:
        """Queue ``obs`` and wait until it is stored: True once committed; False when it was
        given up or not stored within ``wait`` seconds (it may still be, later: a sender's
        retry is then a redelivery)."""
        if not self.consuming:
            return False
        stored = asyncio.get_running_loop().create_future()
        self._waiting[id(obs)] = stored  # ``obs`` is held by the queue: its id stays its own
        try:
            async with asyncio.timeout(wait):
                await self.queue.put(obs)
                self._news.set()  # its sender waits: stored at once, news or not
                return bool(await stored)
        except TimeoutError:
            return False
        finally:
            self._waiting.pop(id(obs), None)

    def _settle(self, batch: list[Observation], stored: bool) -> None:
        for obs in batch:
            waiter = self._waiting.get(id(obs))
            if waiter is not None and not waiter.done():
                waiter.set_result(stored)

    async def put(self, obs: Observation) -> None:
        await self.queue.put(obs)
        if is_news(obs):
            self._news.set()

    def put_nowait(self, obs: Observation) -> None:
        self.queue.put_nowait(obs)
        if is_news(obs):
            self._news.set()

    async def consume(self) -> None:
        """Apply observations in batches, forever. After a quiet spell the first one goes at
        once, even right after a transaction (a kill's ``die`` just after a passing check);
        while busy, transactions are paced to one per ``BATCH_EVERY`` (``guard.util.pacing``) and
        what arrives meanwhile joins the next one, so a storm costs tens of transactions a
        second, not one per line. A batch that mixes log lines with other signals stores the
        others first (``lanes``). A batch with no news waits up to ``ROUTINE_WAIT`` for more,
        unless news comes meanwhile."""
        self.consuming = True
        try:
            await self._consume(Pace(BATCH_EVERY, BURST, time.monotonic()))
        finally:
            self.consuming = False

    async def _consume(self, pace: Pace) -> None:
        while True:
            # held where ``drain`` finds it while this waits: a stop loses nothing it held
            self._held = [await self.queue.get()]
            if not self._news.is_set() and self.queue.qsize() < BATCH:  # routine so far:
                # wait for company, or for news
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._news.wait(), ROUTINE_WAIT)
            self._news.clear()  # what is queued now goes in this batch
            wait = pace.wait(time.monotonic())
            if wait > 0:
                await asyncio.sleep(wait)
            batch, self._held = self._held, []
            if not batch:  # drained meanwhile (Guard stopping)
                continue
            signals = sum(len(o.signals) for o in batch)
            while len(batch) < BATCH and signals < BATCH_SIGNALS and not self.queue.empty():
                batch.append(self.queue.get_nowait())
                signals += len(batch[-1].signals)
            pace.spend(time.monotonic())
            for lane in lanes(batch):
                await self.store(lane)

    async def drain(self) -> None:
        """Store what is queued now, and what the consumer holds (on the way out)."""
        batch, self._held = self._held, []
        while not self.queue.empty():
            batch.append(self.queue.get_nowait())
        if batch:
            await self.store(batch)

    async def store(self, batch: list[Observation]) -> None:
        """Store ``batch``, retrying while the store is unavailable (``OperationalError``),
        so a signal is not dropped for an outage of the store. Any other error, or a Guard
        that is stopping, gives up after ``TRIES``."""
        attempt = 0
        while True:
            attempt += 1
            try:
                context = contextvars.copy_context()  # as ``asyncio.to_thread`` does
                await asyncio.get_running_loop().run_in_executor(
                    self._writer, context.run, self._apply, batch
                )
                if attempt > 1:
                    logger.info("stored {} observations (attempt {})", len(batch), attempt)
                self._settle(batch, True)
                return
            except NotLeader as exc:  # deposed: this replica's observations do not count
                logger.warning("{} observation(s) not stored: {}", len(batch), exc)
                self._settle(batch, False)
                return
            except Exception as exc:
                # a store that is locked, full or away comes back; anything else (a bug, a
                # row the store refuses) would fail forever and hold up every later batch
                lasting = isinstance(exc, OperationalError) and not self._stopping()
                if attempt >= TRIES and not lasting:
                    logger.opt(exception=exc).error(
                        "{} observations not stored: {}", len(batch), exc
                    )
                    for obs in batch:  # the next check re-reads these monitors from the store
                        self._forget(obs.monitor_id)
                    self._settle(batch, False)
                    return
                if attempt == 1 or attempt % 10 == 0:
                    logger.error(
                        "could not store {} observations (attempt {}): {}; retrying",
                        len(batch),
                        attempt,
                        exc,
                    )
                await asyncio.sleep(min(attempt, 5))
