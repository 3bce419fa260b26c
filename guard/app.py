"""The Guard runtime: schedules monitors, follows streams, feeds triage, survives failures.

Monitors hand ``Observation``s to the triage intake (``guard.intake``: one bounded queue, one
consumer applying them to the store in batches).
Each monitor's latest state (a log offset) is kept in memory as soon as a check returns, so the
next check never reads a stale offset, and is persisted with the signals it produced. Whatever a
monitor raises is logged and becomes a ``monitor_error`` signal; nothing a monitor does can
stop the appliance.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger
from loguru import logger

from guard import cluster, metrics
from guard.checks import CheckScheduler
from guard.config import Settings
from guard.exceptions import MonitorError
from guard.intake import Intake
from guard.monitors import BaseliningMonitor, Monitor, StreamingMonitor, build_monitor
from guard.playbooks.loader import check_playbooks
from guard.playbooks.models import MonitorSpec, Playbook
from guard.playbooks.watch import (
    PlaybooksDiff,
    PlaybookWatch,
    active_specs,
    diff_playbooks,
    invalid_signal,
    valid_signal,
)
from guard.records import IncidentEvent, Observation, Severity, Signal
from guard.redact import configure as configure_redaction
from guard.redact import redact_signal
from guard.stalls import StallWatch
from guard.store import audit
from guard.store.db import Database, open_database
from guard.store.state import get_state, get_states, put_state
from guard.triage import Triage, TriagePolicy
from guard.web import WebServer

if TYPE_CHECKING:
    from guard.agent.loop import Agent

EventHook = Callable[[list[IncidentEvent]], Any]


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


def triage_policies(settings: Settings, specs: Iterable[MonitorSpec]) -> dict[str, TriagePolicy]:
    """Each monitor's policy; an intake source's alerts resolve when the sender says so."""
    hooks = {f"intake:{s.id}": TriagePolicy(auto_resolve=True) for s in settings.intake}
    return hooks | {
        spec.id: TriagePolicy(
            for_count=spec.for_count,
            auto_resolve=settings.triage.auto_resolve
            if spec.auto_resolve is None
            else spec.auto_resolve,
        )
        for spec in specs
    }


def freeze_startup_heap() -> None:
    """Move everything built so far (imported modules, settings, playbooks) out of the garbage
    collector's sight: a full collection then walks only what the running Guard allocates, so
    it pauses the event loop for a fraction of the time (it was 120 ms with every import)."""
    gc.collect()
    gc.freeze()


def redact_observation(obs: Observation) -> Observation:
    return Observation([redact_signal(s) for s in obs.signals], obs.state, obs.monitor_id)


class Guard:
    """One appliance: its monitors, its store, its triage."""

    def __init__(
        self,
        settings: Settings,
        playbooks: Iterable[Playbook],
        *,
        db: Database | None = None,
        agent: Agent | None = None,
        heal: bool = True,
    ) -> None:
        self.settings = settings
        configure_redaction(settings)
        audit.configure(settings)
        self.db = db or open_database(settings.database_url)
        self.playbooks = list(playbooks)
        specs = list(active_specs(self.playbooks).values())
        self.monitors: list[Monitor] = [build_monitor(s, settings=settings) for s in specs]
        self.triage = Triage(self.db, settings.triage, triage_policies(settings, specs))
        self._watch = PlaybookWatch(settings.playbooks_dir)  # the files as they were loaded
        self._invalid: dict[Path, str] = {}  # playbook file -> its playbook_invalid message
        self._checks: CheckScheduler | None = None
        self._streams: dict[str, asyncio.Task[None]] = {}  # monitor id -> its follow task
        self.event_hooks: list[EventHook] = [self._log_events]
        self.event_hooks.append(metrics.IncidentMetrics(self.db))
        self._state: dict[str, dict[str, Any]] = {}
        self._healthy: dict[str, bool] = {}  # monitor id -> did its last check work
        self.last_check: dict[str, datetime] = {}  # monitor id -> when its last check ended
        self._stop = asyncio.Event()
        self.intake = Intake(
            lambda batch: self.apply(batch),
            forget=lambda monitor_id: self._state.pop(monitor_id, None),
            stopping=self._stop.is_set,
        )
        self.last_batch_at: datetime | None = None
        self.heal = heal and settings.agent.enabled
        self._agent = agent
        self.leadership = cluster.for_settings(settings, self.db)

    @property
    def agent(self) -> Agent:
        """The agent loop (built on first use: it loads skills and memory)."""
        if self._agent is None:
            from guard.agent.loop import Agent
            from guard.notify import build_notifier

            self._agent = Agent(
                self.settings,
                self.db,
                self.playbooks,
                notifier=build_notifier(self.settings, self.db),
            )
        return self._agent

    # -- one check ------------------------------------------------------------------------------

    def _load_state(self, monitor: Monitor) -> dict[str, Any]:
        if monitor.id not in self._state:
            with self.db.session() as session:
                self._state[monitor.id] = get_state(session, f"monitor:{monitor.id}")
        return self._state[monitor.id]

    def _baseline(self, monitors: Iterable[Monitor] | None = None) -> None:
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
        """Run one check; never raises (a failure comes back as a ``monitor_error`` signal)."""
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

    def apply(self, observations: list[Observation]) -> list[IncidentEvent]:
        """Triage a batch and tell the hooks what happened to incidents.

        Every signal is redacted here, the one place all monitors' signals pass through, so no
        secret in a log line, a response body or an event reaches triage, fingerprints or the
        store (the same fault leaking two different tokens is one incident)."""
        observations = [redact_observation(o) for o in observations]
        events = self.triage.process(observations)
        metrics.count_signals(observations)
        self.last_batch_at = datetime.now(UTC)
        for hook in self.event_hooks:
            try:
                hook(events)
            except Exception:
                logger.exception("an incident event hook failed")
        return events

    @staticmethod
    def _log_events(events: list[IncidentEvent]) -> None:
        for ev in events:
            logger.bind(incident=ev.incident_id, event=ev.type).info(
                "incident #{} {}: {} [{}]", ev.incident_id, ev.type, ev.title, ev.severity
            )

    # -- run modes ------------------------------------------------------------------------------

    async def run_once(self, *, heal: bool = False) -> list[IncidentEvent]:
        """Check every monitor once, triage what they found, and return the incident events.

        With ``heal`` the agent then handles the incidents (and queued human answers) and this
        returns when it is done with them.
        """
        self._audit("guard.run_once", {"monitors": [m.id for m in self.monitors]})
        try:
            if heal:
                self._attach_agent()
            slots = asyncio.Semaphore(self.settings.scheduler.max_concurrent_checks)

            async def bounded(m: Monitor) -> Observation:
                async with slots:
                    return await self.check(m)

            observations = await asyncio.gather(*(bounded(m) for m in self.monitors))
            events = await asyncio.to_thread(self.apply, list(observations))
            if heal:
                await self.agent.resume()
                await self.agent.poll_commands()
                await self.agent.drain()
                await self.agent.shutdown()
            return events
        finally:
            await self.close()

    def _attach_agent(self) -> None:
        agent = self.agent
        agent.bind(asyncio.get_running_loop())
        self.event_hooks.append(agent.on_events)

    async def run(self) -> None:
        """Run until SIGINT/SIGTERM or ``stop()``; with replicas, act only while the leader."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.stop)
        with cluster.installed(self.leadership):
            await self._run()

    async def _run(self) -> None:
        self._audit(
            "guard.started",
            {"monitors": [m.id for m in self.monitors], "replica": self.leadership.replica.id},
        )
        # a job late because the loop was busy (or the clock jumped) runs, once, not "missed"
        scheduler = AsyncIOScheduler(
            timezone=UTC, job_defaults={"misfire_grace_time": None, "coalesce": True}
        )
        scheduler.start()
        web = WebServer(self, scheduler)
        release = asyncio.Event()  # set last: the lease is held until the work is put away
        lease = asyncio.create_task(self.leadership.run(release, self._deposed), name="lease")
        if self.leadership.ha:
            await web.start()
            logger.info(
                "replica {} is a standby until it holds the leader lease",
                self.leadership.replica.id,
            )
        if not await self.leadership.elected(self._stop):
            await web.close()
            scheduler.shutdown(wait=False)
            release.set()
            await asyncio.gather(lease, return_exceptions=True)
            await self.close()
            logger.info("guard stopped (standby)")
            return
        await asyncio.to_thread(self._baseline)
        await self._sync_skills()  # first: clone the skills remote before skills are loaded
        checks = CheckScheduler(
            self.monitors,
            self._scheduled,
            max_concurrent=self.settings.scheduler.max_concurrent_checks,
        )
        checks.start()
        web.checks = self._checks = checks
        jobs = {
            "playbooks:watch": (self.reload_playbooks, self.settings.playbooks_watch_every),
            "skills:sync": (
                self._sync_skills,
                self.settings.skills.sync_every if self.settings.skills.git_remote else 0,
            ),
            "audit:anchor": (self._anchor, self.settings.audit.anchor_every),
        }
        for job_id, (job, every) in jobs.items():
            if every:  # 0: never
                scheduler.add_job(
                    job, IntervalTrigger(seconds=every), id=job_id, coalesce=True, max_instances=1
                )
        if self.settings.store.retention:
            scheduler.add_job(
                self._prune,
                IntervalTrigger(hours=24),
                id="store:prune",
                coalesce=True,
                max_instances=1,
                next_run_time=datetime.now(UTC),
            )
        from guard.notify import build_gateway

        gateway = build_gateway(self.settings, self.db, self)
        if gateway is not None:
            await gateway.start()
        triage = asyncio.create_task(self.intake.consume(), name="triage")
        # Cancelled at shutdown: they only feed triage or watch.
        stalls = StallWatch(self.settings.loop_stall_warning)
        feeders = [asyncio.create_task(stalls.run(self._stop), name="loop-watch")]
        agent: asyncio.Task[None] | None = None  # ends by itself once ``_stop`` is set
        if self.heal:
            self._attach_agent()
            agent = asyncio.create_task(self.agent.run(self._stop), name="agent")
            self.intake.put_nowait(Observation(skill_invalid_signals(self.agent.library), {}))
        self._follow_all(self.monitors)
        # an incident from an invalid edit before a restart resolves: these files load
        self.intake.put_nowait(Observation([valid_signal(p) for p in self._watch.files], {}))
        logger.info(
            "guard running: {} monitors ({} streaming), agent {}",
            len(self.monitors),
            len(self._streams),
            "on" if self.heal else "off",
        )
        freeze_startup_heap()  # started: shorter collector pauses from now on
        try:
            if not self.leadership.ha:
                await web.start()
            await self._stop.wait()
        finally:
            await web.close()
            await checks.stop()
            scheduler.shutdown(wait=False)
            feeders += self._streams.values()
            for t in feeders:
                t.cancel()
            await asyncio.gather(*feeders, *([agent] if agent else []), return_exceptions=True)
            if not self.leadership.deposed:
                await self.intake.drain()  # what the feeders queued last reaches the store
            if gateway is not None:
                await gateway.stop()
            triage.cancel()
            await asyncio.gather(triage, return_exceptions=True)
            release.set()
            await asyncio.gather(lease, return_exceptions=True)
            self._audit("guard.stopped", {"deposed": self.leadership.deposed})
            await self.close()
            logger.info("guard stopped")

    def _deposed(self) -> None:
        """The lease was lost: stop at once (``guard run`` exits 3; the supervisor restarts
        this replica as a standby). Claims still in flight are refused by their fence."""
        self.stop()

    def stop(self) -> None:
        self._stop.set()

    def _follow_all(self, monitors: Iterable[Monitor]) -> None:
        """Follow the event streams of those of ``monitors`` that have one turned on."""
        for m in monitors:
            if isinstance(m, StreamingMonitor) and getattr(
                getattr(m, "spec", None), "events", True
            ):
                self._streams[m.id] = asyncio.create_task(self._follow(m), name=f"follow:{m.id}")

    async def reload_playbooks(self) -> PlaybooksDiff | None:
        """Apply the playbook files if they changed since last seen (``playbooks_watch_every``).
        An invalid edit changes nothing that runs: it is logged and each broken file becomes a
        ``playbook_invalid`` signal on Guard itself; a valid one is applied and resolves those."""
        if not await asyncio.to_thread(self._watch.changed):
            return None
        folder = self.settings.playbooks_dir
        books, problems = await asyncio.to_thread(check_playbooks, folder)
        diff = None
        if not problems:
            try:
                diff = await self.apply_playbooks(books)
            except Exception as exc:  # a monitor that cannot be built: nothing was changed
                logger.opt(exception=exc).error("could not apply the playbooks in {}", folder)
                problems = {folder: [f"{folder}: cannot apply: {type(exc).__name__}: {exc}"]}
        signals = [valid_signal(p) for p in self._invalid if p not in problems]
        failed = {path: invalid_signal(path, found) for path, found in problems.items()}
        # another problem in the same file: the old incident resolves, the new one opens
        moved = [p for p, s in failed.items() if self._invalid.get(p, s.message) != s.message]
        signals += [valid_signal(p) for p in moved]
        signals += [s for p, s in failed.items() if self._invalid.get(p) != s.message]
        self._invalid = {p: s.message for p, s in failed.items()}
        if signals:
            await self.intake.put(Observation(signals, {}))
        if diff is None:
            logger.error(
                "playbooks in {} are invalid; Guard keeps the last good config: {}",
                folder,
                "; ".join(p for found in problems.values() for p in found),
            )
            return None
        logger.info("playbooks reloaded from {}: {}", folder, diff.as_dict())
        await asyncio.to_thread(self._audit, "playbooks.reloaded", diff.as_dict())
        return diff

    async def apply_playbooks(self, books: list[Playbook]) -> PlaybooksDiff:
        """Run ``books`` instead of the current playbooks: start added monitors, stop and close
        removed ones, replace changed ones (keeping their state); unchanged monitors, their
        state (a log cursor) and their incidents are not touched."""
        diff = diff_playbooks(self.playbooks, books)
        specs = active_specs(books)
        old = {m.id: m for m in self.monitors}
        fresh = {
            i: build_monitor(specs[i], settings=self.settings) for i in diff.added + diff.changed
        }
        await asyncio.to_thread(self._baseline, fresh.values())  # before anything changes
        gone = [old[i] for i in diff.removed + diff.changed]
        self.monitors = [fresh.get(i) or old[i] for i in specs]
        self.playbooks = list(books)
        self.triage.policies = triage_policies(self.settings, specs.values())
        if self._agent is not None:
            self._agent.use_playbooks(self.playbooks)
        for i in diff.removed:
            self._state.pop(i, None)
            self._healthy.pop(i, None)
            self.last_check.pop(i, None)
        for m in gone:
            task = self._streams.pop(m.id, None)
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        if self._checks is not None:  # running (not ``run_once``)
            self._checks.update(self.monitors)
            self._follow_all(fresh.values())
        for m in gone:
            with contextlib.suppress(Exception):
                await m.close()
        return diff

    async def _scheduled(self, monitor: Monitor) -> None:
        await self.intake.put(await self.check(monitor))

    async def _follow(self, monitor: StreamingMonitor) -> None:
        """Keep a monitor's event stream open, reconnecting with backoff."""
        delay = 1.0

        async def emit(obs: Observation) -> None:
            nonlocal delay
            delay = 1.0
            await self.intake.put(Observation(list(obs.signals), obs.state, monitor.id))

        while not self._stop.is_set():
            try:
                await monitor.follow(emit)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                await self.intake.put(self._failed(monitor, exc))
            await asyncio.sleep(delay)
            delay = min(delay * 2, 30.0)

    async def _sync_skills(self) -> None:
        """Fetch the skills remote and fast-forward (``guard.skills.remote``); a failure is an
        incident on Guard itself, a success resolves it. The agent reloads what changed when
        it next recalls skills."""
        if not self.settings.skills.git_remote:
            return
        from guard.skills.remote import sync_now

        _, signals = await asyncio.to_thread(sync_now, self.settings)
        await self.intake.put(Observation(signals, {}))

    async def _anchor(self) -> None:
        """Record the audit chain's head outside the database (``audit-anchors.jsonl``)."""
        path = self.settings.data_dir / audit.ANCHORS
        try:
            a = await asyncio.to_thread(audit.anchor, self.db, path)
        except Exception:
            logger.exception("could not anchor the audit chain in {}", path)
        else:
            logger.info("audit chain anchored at #{} in {}", a.seq, path)

    async def _prune(self) -> None:
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

    def _audit(self, action: str, data: dict[str, Any]) -> None:
        with self.db.session() as session:
            audit.append(session, actor="guard", action=action, subject="guard", data=data)

    async def close(self) -> None:
        for m in self.monitors:
            with contextlib.suppress(Exception):
                await m.close()
