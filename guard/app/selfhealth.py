"""Guard watching itself: the signals it raises about its own parts (a monitor that fails or
works again, a quarantined skill) and its housekeeping jobs (skills sync, audit anchor, store
pruning), each of which turns a failure into a log line or an incident, never a crash."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger
from loguru import logger

from guard.config import Settings
from guard.domain.exceptions import MonitorError
from guard.domain.records import Observation, Severity, Signal
from guard.monitors import Monitor
from guard.store import audit
from guard.store.db import Database

Put = Callable[[Observation], Awaitable[None]]
Job = Callable[[], Awaitable[Any]]


def monitor_error_signal(monitor: Monitor, exc: BaseException) -> Signal:
    message = str(exc) if isinstance(exc, MonitorError) else f"{type(exc).__name__}: {exc}"
    return Signal(
        monitor_id=monitor.id,
        source="guard",
        target=monitor.id,
        kind="monitor_error",
        message=f"monitor {monitor.id} failed: {message}",
        severity=Severity.warning,
        details={"monitor_type": monitor.type},
    )


def skill_invalid_signals(library: Any) -> list[Signal]:
    """One ``skill_invalid`` signal on Guard itself per quarantined skill (it never stops
    Guard: it is skipped, and a human is told what to fix)."""
    return [
        Signal(
            monitor_id="skills",
            source="guard",
            target=f"skill:{name}",
            kind="skill_invalid",
            severity=Severity.error,
            message=f"skill {name} does not load and is quarantined: " + "; ".join(problems)[:800],
            details={"skill": name, "problems": problems[:20]},
        )
        for name, problems in library.quarantined.items()
    ]


def monitor_ok_signal(monitor: Monitor) -> Signal:
    return Signal(
        monitor_id=monitor.id,
        source="guard",
        target=monitor.id,
        kind="monitor_ok",
        message=f"monitor {monitor.id} is working",
        status="ok",
    )


def start_scheduler() -> AsyncIOScheduler:
    """The scheduler of Guard's periodic jobs, started (its jobs are added once Guard leads)."""
    # a job late because the loop was busy (or the clock jumped) runs, once, not "missed"
    scheduler = AsyncIOScheduler(
        timezone=UTC, job_defaults={"misfire_grace_time": None, "coalesce": True}
    )
    scheduler.start()
    return scheduler


class Housekeeping:
    """Guard's periodic jobs on itself; each logs or raises an incident, never fails the run."""

    def __init__(
        self, settings: Settings, db: Database, put: Put, paging: Callable[[], dict[str, Any]]
    ) -> None:
        self.settings = settings
        self.db = db
        self._put = put
        self._paging = paging  # the notification pipeline's jobs (escalation, quiet hours)

    def schedule(self, scheduler: AsyncIOScheduler, more: dict[str, tuple[Job, float]]) -> None:
        """Add the housekeeping jobs and ``more`` (job id -> (job, every how many seconds; 0:
        never)) to ``scheduler``; pruning (``store.retention``) runs at once, then daily."""
        s = self.settings
        jobs = {
            **more,
            **self._paging(),
            "skills:sync": (self.sync_skills, s.skills.sync_every if s.skills.git_remote else 0),
            "audit:anchor": (self.anchor, s.audit.anchor_every),
        }
        for job_id, (job, every) in jobs.items():
            if every:  # 0: never
                scheduler.add_job(
                    job, IntervalTrigger(seconds=every), id=job_id, coalesce=True, max_instances=1
                )
        if s.store.retention:
            scheduler.add_job(
                self.prune,
                IntervalTrigger(hours=24),
                id="store:prune",
                coalesce=True,
                max_instances=1,
                next_run_time=datetime.now(UTC),
            )

    async def sync_skills(self) -> None:
        """Fetch the skills remote and fast-forward (``guard.skills.remote``); a failure is an
        incident on Guard itself, a success resolves it. The agent reloads what changed when
        it next recalls skills."""
        if not self.settings.skills.git_remote:
            return
        from guard.skills.remote import sync_now

        _, signals = await asyncio.to_thread(sync_now, self.settings, db=self.db)
        await self._put(Observation(signals, {}))

    async def anchor(self) -> None:
        """Record the audit chain's head outside the database (``audit-anchors.jsonl``)."""
        path = self.settings.data_dir / audit.ANCHORS
        try:
            a = await asyncio.to_thread(audit.anchor, self.db, path)
        except Exception:
            logger.exception("could not anchor the audit chain in {}", path)
        else:
            logger.info("audit chain anchored at #{} in {}", a.seq, path)

    async def prune(self) -> None:
        """Apply ``store.retention`` (``guard.store.retention``)."""
        from guard.store.retention import prune

        try:
            done = await asyncio.to_thread(
                prune,
                self.db,
                self.settings.store.retention,
                self.settings.data_dir / audit.ANCHORS,
            )
        except Exception:
            logger.exception("could not prune the store")
        else:
            if done.rows:
                logger.info("pruned data older than {}: {}", done.cutoff, done.rows)
