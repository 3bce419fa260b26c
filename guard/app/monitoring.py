"""The running monitors: each one's check, its event stream, its state and its health.

Each monitor's latest state (a log offset) is kept in memory as soon as a check returns, so the
next check never reads a stale offset, and is persisted with the signals it produced. Whatever a
monitor raises is logged and becomes a ``monitor_error`` signal; nothing a monitor does can
stop the appliance.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from loguru import logger

from guard.app.checks import CheckScheduler
from guard.app.image_history import ImageHistory
from guard.app.selfhealth import Put, monitor_error_signal, monitor_ok_signal
from guard.domain.exceptions import MonitorError
from guard.domain.records import Observation, Signal, utcnow
from guard.monitors import BaseliningMonitor, Monitor, StreamingMonitor
from guard.monitors.kinds import monitor_kind
from guard.store.db import Database
from guard.store.state import get_state, get_states, put_state


class MonitorRunner:
    """Checks monitors, follows their streams and hands what they saw to ``put`` (the intake)."""

    def __init__(
        self, db: Database, monitors: list[Monitor], put: Put, stop: asyncio.Event
    ) -> None:
        self.db = db
        self.monitors = monitors
        self._put = ImageHistory(db).wrap(put)  # docker.rollback's previous images
        self._stop = stop
        self.checks: CheckScheduler | None = None  # the schedule, while running (not run_once)
        self._streams: dict[str, asyncio.Task[None]] = {}  # monitor id -> its follow task
        self._state: dict[str, dict[str, Any]] = {}
        self._healthy: dict[str, bool] = {}  # monitor id -> did its last check work
        self.last_check: dict[str, datetime] = {}  # monitor id -> when its last check ended

    def forget(self, monitor_id: str) -> None:
        """Drop a monitor's state in memory: its next check re-reads it from the store."""
        self._state.pop(monitor_id, None)

    def _load_state(self, monitor: Monitor) -> dict[str, Any]:
        if monitor.id not in self._state:
            with self.db.session() as session:
                self._state[monitor.id] = get_state(session, f"monitor:{monitor.id}")
        return self._state[monitor.id]

    def baseline(self, monitors: Iterable[Monitor] | None = None) -> None:
        """Load the monitors' states (all of them by default), then let monitors that start
        "from now" (log files) fix where now is, before running."""
        monitors = list(self.monitors if monitors is None else monitors)
        with self.db.session() as session:
            stored = get_states(session, (f"monitor:{m.id}" for m in monitors))
        for m in monitors:
            self._state.setdefault(m.id, stored[f"monitor:{m.id}"])
        for m in monitors:
            if not isinstance(m, BaseliningMonitor):
                continue
            state = m.baseline(self._load_state(m))
            if state is not None:
                self._state[m.id] = state
                with self.db.session() as session:
                    put_state(session, f"monitor:{m.id}", state)

    async def check(self, monitor: Monitor) -> Observation:
        """Run one check; never raises (a failure comes back as a ``monitor_error`` signal).
        A probe's failures say when it was asked (``MonitorKind.probe``)."""
        asked = utcnow()
        try:
            state = self._state.get(monitor.id)
            if state is None:  # the first check reads the store; later ones use memory
                state = await asyncio.to_thread(self._load_state, monitor)
            obs = await monitor.check(state)
        except Exception as exc:
            return self._failed(monitor, exc)
        finally:
            self.last_check[monitor.id] = datetime.now(UTC)
        if obs.state:
            self._state[monitor.id] = obs.state
        signals = list(obs.signals)
        if is_probe(monitor.type):
            signals = [asked_at(s, asked) for s in signals]
        if not self._healthy.get(monitor.id, False):
            signals.append(monitor_ok_signal(monitor))
            self._healthy[monitor.id] = True
        return Observation(signals, obs.state, monitor.id)

    def health(self) -> list[dict[str, Any]]:
        """Each monitor's health (None: not checked yet) and the end of its last check."""
        return [
            {
                "id": m.id,
                "type": m.type,
                "healthy": self._healthy.get(m.id),
                "last_check": self.last_check.get(m.id),
            }
            for m in self.monitors
        ]

    def _failed(self, monitor: Monitor, exc: BaseException) -> Observation:
        if isinstance(exc, MonitorError):
            logger.warning("monitor {} failed: {}", monitor.id, exc)
        else:
            logger.opt(exception=exc).error("monitor {} raised unexpectedly", monitor.id)
        self._healthy[monitor.id] = False
        return Observation([monitor_error_signal(monitor, exc)], {}, monitor.id)

    async def scheduled(self, monitor: Monitor) -> None:
        """One scheduled check (``CheckScheduler``), its observation queued for triage."""
        await self._put(await self.check(monitor))

    def follow_all(self, monitors: Iterable[Monitor] | None = None) -> None:
        """Follow the event streams of those of ``monitors`` (default: all) that have one on."""
        for m in self.monitors if monitors is None else monitors:
            if isinstance(m, StreamingMonitor) and getattr(
                getattr(m, "spec", None), "events", True
            ):
                self._streams[m.id] = asyncio.create_task(self._follow(m), name=f"follow:{m.id}")

    def streams(self) -> list[asyncio.Task[None]]:
        """The follow tasks running now (cancelled at shutdown: they only feed triage)."""
        return list(self._streams.values())

    async def _follow(self, monitor: StreamingMonitor) -> None:
        """Keep a monitor's event stream open, reconnecting with backoff."""
        delay = 1.0

        async def emit(obs: Observation) -> None:
            nonlocal delay
            delay = 1.0
            await self._put(Observation(list(obs.signals), obs.state, monitor.id))

        while not self._stop.is_set():
            try:
                await monitor.follow(emit)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                await self._put(self._failed(monitor, exc))
            await asyncio.sleep(delay)
            delay = min(delay * 2, 30.0)

    async def replace(
        self,
        monitors: list[Monitor],
        fresh: Iterable[Monitor],
        gone: list[Monitor],
        removed: Iterable[str],
    ) -> None:
        """Run ``monitors`` from now on: forget the ``removed`` ids, stop and close the ``gone``
        monitors, schedule and follow the ``fresh`` ones (already baselined)."""
        self.monitors = monitors
        for i in removed:
            self._state.pop(i, None)
            self._healthy.pop(i, None)
            self.last_check.pop(i, None)
        for m in gone:
            task = self._streams.pop(m.id, None)
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        if self.checks is not None:  # running (not ``run_once``)
            self.checks.update(self.monitors)
            self.follow_all(fresh)
        await close_all(gone)

    async def close(self) -> None:
        await close_all(self.monitors)


async def close_all(monitors: Iterable[Monitor]) -> None:
    """Close each monitor; one that fails to close does not keep the others open."""
    for m in monitors:
        with contextlib.suppress(Exception):
            await m.close()


def is_probe(monitor_type: str) -> bool:
    """Whether a monitor of this type is a probe (its failures can be asked again)."""
    kind = monitor_kind(monitor_type)
    return kind is not None and kind.probe


def asked_at(sig: Signal, asked: datetime) -> Signal:
    """``sig`` saying when its check was asked: a failure asked before its incident was
    resolved is a timeline entry, not a reopen (``guard.triage.flapping``)."""
    if sig.status != "firing" or sig.started_at is not None:
        return sig
    return replace(sig, started_at=asked)
