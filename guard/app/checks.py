"""The check scheduler: every monitor's check on its interval, a bounded number at a time.

One task sleeps until the earliest due check (a heap of due times), so a thousand monitors
cost a thousand heap entries, not a thousand scheduler jobs and timers. A due check becomes a
task that first takes one of ``max_concurrent_checks`` slots; from its due time to taking the
slot is its lag, ``guard_check_lag_seconds``: what a saturated box, a blocked event loop or
too small a bound costs. A check still running when it is due again is not started twice
(coalesced: its next due time moves on).

Every monitor is checked at start. After that, each monitor's schedule is offset by a fixed
fraction of its interval (a low-discrepancy sequence over the monitors), so a thousand
monitors with the same interval spread over it instead of firing at the same instant; the
offset only ever brings a check forward, never later than the interval after the first.

The scheduler wakes for the earliest due check and starts with it every check due within
``EARLY`` (capped at 1 % of each one's interval): a thousand monitors spread over ten seconds
are a wake-up every 50 ms with a handful of checks, not one per check (each wake-up of an idle
loop costs more than the check it starts). A check is started at most that early, never late.
"""

from __future__ import annotations

import asyncio
import heapq
import math
import random
import time
from collections.abc import Awaitable, Callable, Sequence

from loguru import logger

from guard.monitors import Monitor
from guard.telemetry import metrics

GOLDEN = (math.sqrt(5) - 1) / 2
Check = Callable[[Monitor], Awaitable[None]]
EARLY = 0.05  # seconds: a check due this soon starts with the ones due now


def phase(index: int) -> float:
    """The fraction of its interval by which the ``index``-th monitor's schedule is offset."""
    return (index * GOLDEN) % 1.0


class CheckScheduler:
    """Runs ``check(monitor)`` for each monitor every ``monitor.interval`` seconds."""

    def __init__(
        self,
        monitors: Sequence[Monitor],
        check: Check,
        *,
        max_concurrent: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.monitors = list(monitors)
        self._ids = frozenset(m.id for m in self.monitors)
        self._check = check
        self._clock = clock
        self._slots = asyncio.Semaphore(max_concurrent)
        self._heap: list[tuple[float, int, float]] = []  # (due, monitor index, base time)
        self._busy: dict[int, asyncio.Task[None]] = {}  # id(monitor) -> its check under way
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop_task: asyncio.Task[None] | None = None
        self._first = 0.0  # when the first round was due
        self.coalesced = 0  # checks not started because the previous one still ran

    @property
    def running(self) -> bool:
        return self._loop_task is not None and not self._loop_task.done()

    def scheduled(self, monitor_id: str) -> bool:
        """Whether ``monitor_id`` is on the schedule (for ``/readyz``)."""
        return self.running and monitor_id in self._ids

    def update(self, monitors: Sequence[Monitor]) -> None:
        """Schedule ``monitors`` from now on (a playbook reload). A monitor object scheduled
        before keeps its due time and its check under way; a new one is checked at once; the
        check under way of one no longer listed is cancelled."""
        new = list(monitors)
        position = {id(m): i for i, m in enumerate(new)}
        now = self._clock()
        kept = {id(self.monitors[i]) for _, i, _ in self._heap}
        heap = [
            (due, position[id(self.monitors[i])], base)
            for due, i, base in self._heap
            if id(self.monitors[i]) in position
        ]
        heap += [(now, i, now) for i, m in enumerate(new) if id(m) not in kept]
        heapq.heapify(heap)
        for key, task in list(self._busy.items()):
            if key not in position:
                task.cancel()
        self.monitors, self._heap = new, heap
        self._ids = frozenset(m.id for m in new)
        metrics.set_monitors(m.type for m in new)
        if self.running and self._loop_task is not None:  # wake it: a new check is due now
            self._loop_task.cancel()
            self._loop_task = asyncio.create_task(self._run(), name="checks")

    def start(self) -> None:
        now = self._first = self._clock()
        self._heap = [(now, i, now) for i in range(len(self.monitors))]
        heapq.heapify(self._heap)
        metrics.set_monitors(m.type for m in self.monitors)
        self._loop_task = asyncio.create_task(self._run(), name="checks")

    async def stop(self) -> None:
        """Stop scheduling and cancel the checks under way."""
        tasks = [t for t in (self._loop_task, *self._tasks) if t is not None]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._loop_task = None

    def _next(self, index: int, base: float, now: float) -> tuple[float, float]:
        """The next (due, base) of a monitor whose run at ``base`` is being started at ``now``."""
        monitor = self.monitors[index]
        interval = max(monitor.interval, 0.001)
        first_round = base == self._first
        nxt = base + (interval * (phase(index) or 1.0) if first_round else interval)
        if nxt <= now:  # the loop fell behind by more than an interval: skip, do not queue up
            nxt += interval * (math.floor((now - nxt) / interval) + 1)
        jitter = random.uniform(0, monitor.jitter) if monitor.jitter else 0.0
        return nxt + jitter, nxt

    async def _run(self) -> None:
        while True:
            now = self._clock()
            while self._heap and self._heap[0][0] <= now + self._early(self._heap[0][1]):
                due, index, base = heapq.heappop(self._heap)
                nxt_due, nxt_base = self._next(index, base, now)
                heapq.heappush(self._heap, (nxt_due, index, nxt_base))
                monitor = self.monitors[index]
                if id(monitor) in self._busy:
                    self.coalesced += 1
                    continue
                task = asyncio.create_task(self._one(monitor, due))
                self._busy[id(monitor)] = task
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            if not self._heap:
                await asyncio.Event().wait()  # nothing to schedule: wait to be cancelled
            await asyncio.sleep(max(self._heap[0][0] - self._clock(), 0.0))

    def _early(self, index: int) -> float:
        """How early the ``index``-th monitor's check may start with others (``EARLY``)."""
        return min(EARLY, self.monitors[index].interval / 100)

    async def _one(self, monitor: Monitor, due: float) -> None:
        try:
            async with self._slots:
                metrics.observe_check_lag(monitor.type, self._clock() - due)  # early: 0
                await self._check(monitor)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("the check of monitor {} failed unexpectedly", monitor.id)
        finally:
            self._busy.pop(id(monitor), None)
