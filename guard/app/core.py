"""The Guard: one appliance's monitors, store, triage and agent, started and stopped together.

Monitors (``monitoring``) hand ``Observation``s to the triage intake (``guard.triage.queue``: one
bounded queue, one consumer applying them to the store in batches, through ``Guard.apply``).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

from loguru import logger

from guard import cluster
from guard.app.checks import CheckScheduler
from guard.app.monitoring import MonitorRunner
from guard.app.process import freeze_startup_heap
from guard.app.reload import PlaybookReloader
from guard.app.selfhealth import Housekeeping, skill_invalid_signals, start_scheduler
from guard.app.stalls import StallWatch
from guard.app.wiring import build_agent, triage_policies
from guard.config import Settings
from guard.domain.records import IncidentEvent, Observation
from guard.monitors import Monitor, build_monitor
from guard.playbooks.models import Playbook
from guard.playbooks.services import service_map
from guard.playbooks.watch import PlaybooksDiff, active_specs, diff_playbooks
from guard.redact import configure as configure_redaction
from guard.redact import redact_signal
from guard.store import audit
from guard.store.db import Database, open_database
from guard.telemetry import metrics
from guard.triage import Triage
from guard.triage.queue import Intake
from guard.web.server import WebServer

if TYPE_CHECKING:
    from guard.agent.loop import Agent
    from guard.notify.pipeline import Pipeline
    from guard.notify.quiet import QuietNotifier

EventHook = Callable[[list[IncidentEvent]], Any]
QUIET_TICK = 1.0  # seconds between triage's sweeps while no monitor reports anything
CAPABILITIES_EVERY = 60.0  # seconds between looks at what works here (``/readyz``)


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
        self._stop = asyncio.Event()
        self.monitoring = MonitorRunner(
            self.db, [build_monitor(s, settings=settings) for s in specs], self._put, self._stop
        )
        self.triage = Triage(self.db, settings.triage, triage_policies(settings, specs))
        self.triage.correlation.services = service_map(self.playbooks)
        self.reloader = PlaybookReloader(
            settings.playbooks_dir, self.apply_playbooks, self._put, self._audit
        )
        self.housekeeping = Housekeeping(settings, self.db, self._put, lambda: self.pipeline.jobs())
        self.event_hooks: list[EventHook] = [self._log_events]
        self.event_hooks.append(metrics.IncidentMetrics(self.db))
        self.intake = Intake(
            lambda batch: self.apply(batch),
            forget=self.monitoring.forget,
            stopping=self._stop.is_set,
        )
        self.last_batch_at: datetime | None = None
        self.heal = heal and settings.agent.enabled
        self._agent = agent
        self.leadership = cluster.for_settings(settings, self.db)
        self.capabilities: list[dict[str, Any]] = []  # what works here (guard.app.capabilities)

    @cached_property
    def pipeline(self) -> Pipeline:
        """The notification pipeline (``guard.notify.pipeline``), built on first use."""
        from guard.notify.pipeline import build_pipeline

        return build_pipeline(self.settings, self.db)

    @property
    def quiet(self) -> QuietNotifier | None:
        """Quiet hours around what the agent asks through (None: none configured)."""
        return self.pipeline.quiet

    @property
    def agent(self) -> Agent:
        """The agent loop (built on first use: it loads skills and memory)."""
        if self._agent is None:
            self._agent = build_agent(self.settings, self.db, self.playbooks, self.pipeline)
        return self._agent

    async def refresh_capabilities(self, *, warn: bool = False) -> None:
        """Look again at what works here (``/readyz``); with ``warn`` (at start, once), log a
        warning per skill or playbook whose shell steps cannot run here."""
        from guard.app.capabilities import snapshot

        skills = self.agent.library.skills if self.heal else []
        self.capabilities, warnings = await asyncio.to_thread(
            snapshot, self.settings, self.playbooks, skills
        )
        for warning in warnings if warn else []:
            logger.warning(warning)

    async def release_held(self) -> list[int]:
        """The leader's quiet-hours job: ask the questions the agent's quiet hours held once
        they may be asked (``guard.notify.quiet``)."""
        return await self.pipeline.release_held()

    @property
    def monitors(self) -> list[Monitor]:
        return self.monitoring.monitors

    @monitors.setter
    def monitors(self, monitors: list[Monitor]) -> None:
        self.monitoring.monitors = monitors

    @property
    def last_check(self) -> dict[str, datetime]:
        """Monitor id -> when its last check ended."""
        return self.monitoring.last_check

    async def _put(self, obs: Observation) -> None:
        await self.intake.put(obs)

    # -- checks and triage ----------------------------------------------------------------------

    async def check(self, monitor: Monitor) -> Observation:
        """Run one check; never raises (a failure comes back as a ``monitor_error`` signal)."""
        return await self.monitoring.check(monitor)

    def health(self) -> list[dict[str, Any]]:
        """Each monitor's health (None: not checked yet) and the end of its last check."""
        return self.monitoring.health()

    def apply(
        self, observations: list[Observation], *, release_all: bool = False
    ) -> list[IncidentEvent]:
        """Triage a batch and tell the hooks what happened to incidents.

        Every signal is redacted here, the one place all monitors' signals pass through, so no
        secret in a log line, a response body or an event reaches triage, fingerprints or the
        store (the same fault leaking two different tokens is one incident)."""
        observations = [redact_observation(o) for o in observations]
        events = self.triage.process(observations, release_all=release_all)
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

    # -- playbook reload ------------------------------------------------------------------------

    async def reload_playbooks(self) -> PlaybooksDiff | None:
        """Apply the playbook files if they changed since last seen (``guard.app.reload``)."""
        return await self.reloader.reload()

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
        await asyncio.to_thread(self.monitoring.baseline, fresh.values())  # before any change
        gone = [old[i] for i in diff.removed + diff.changed]
        monitors = [fresh.get(i) or old[i] for i in specs]
        self.playbooks = list(books)
        self.triage.policies = triage_policies(self.settings, specs.values())
        self.triage.correlation.services = service_map(books)
        if self._agent is not None:
            self._agent.use_playbooks(self.playbooks)
        await self.monitoring.replace(monitors, fresh.values(), gone, diff.removed)
        return diff

    # -- run modes ------------------------------------------------------------------------------

    async def run_once(self, *, heal: bool = False) -> list[IncidentEvent]:
        """Check every monitor once, triage what they found, and return the incident events.

        With ``heal`` the agent then handles the incidents (and queued human answers) and this
        returns when it is done with them. Due pages are delivered last (``_deliver_pages``).
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
            # one check: no cause comes later, so what waits for one is triaged now
            events = await asyncio.to_thread(self.apply, list(observations), release_all=True)
            if heal:
                await self.agent.resume()
                await self.agent.poll_commands()
                await self.agent.drain()
                await self.agent.shutdown()
            await self._deliver_pages()
            return events
        finally:
            await self.close()

    async def _deliver_pages(self) -> None:
        """``--once``: deliver the due pages, one bounded drain claimed like the page worker's
        (with replicas, only if no other replica leads: ``guard.notify.pagers.once``)."""
        from guard.notify.pagers.once import deliver_once

        await deliver_once(self.settings, self.db, self.leadership)

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
        scheduler = start_scheduler()
        from guard.app.webconsole import console_routes  # jinja2 and the pages: only when run

        web = WebServer(self, scheduler, routes=console_routes(self))
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
        await asyncio.to_thread(self.monitoring.baseline)
        # first: clone the skills remote before skills are loaded
        await self.housekeeping.sync_skills()
        checks = CheckScheduler(
            self.monitors,
            self.monitoring.scheduled,
            max_concurrent=self.settings.scheduler.max_concurrent_checks,
        )
        checks.start()
        web.checks = self.monitoring.checks = checks
        self.housekeeping.schedule(
            scheduler,
            {
                "playbooks:watch": (self.reload_playbooks, self.settings.playbooks_watch_every),
                "triage:quiet": (self._tick_triage, QUIET_TICK),
                "capabilities": (self.refresh_capabilities, CAPABILITIES_EVERY),
            },
        )
        runners = self.pipeline.runners(self)  # each configured chat channel's
        for runner in runners:
            await runner.start()
        pager = self.pipeline.page_worker()  # delivers pages (None: no notifiers)
        paging = asyncio.create_task(pager.run(self._stop), name="pages") if pager else None
        triage = asyncio.create_task(self.intake.consume(), name="triage")
        # Cancelled at shutdown: they only feed triage or watch.
        stalls = StallWatch(self.settings.loop_stall_warning)
        feeders = [asyncio.create_task(stalls.run(self._stop), name="loop-watch")]
        agent: asyncio.Task[None] | None = None  # ends by itself once ``_stop`` is set
        if self.heal:
            self._attach_agent()
            agent = asyncio.create_task(self.agent.run(self._stop), name="agent")
            self.intake.put_nowait(Observation(skill_invalid_signals(self.agent.library), {}))
        self.monitoring.follow_all()
        self.intake.put_nowait(self.reloader.valid_signals())
        await self.refresh_capabilities(warn=True)
        logger.info(
            "guard running: {} monitors ({} streaming), agent {}",
            len(self.monitors),
            len(self.monitoring.streams()),
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
            feeders += self.monitoring.streams()
            for t in feeders:
                t.cancel()
            await asyncio.gather(*feeders, *([agent] if agent else []), return_exceptions=True)
            if not self.leadership.deposed:
                await self.intake.drain()  # what the feeders queued last reaches the store
            for runner in runners:
                await runner.stop()
            if paging is not None:
                await asyncio.gather(paging, return_exceptions=True)
            triage.cancel()
            await asyncio.gather(triage, return_exceptions=True)
            release.set()
            await asyncio.gather(lease, return_exceptions=True)
            self._audit("guard.stopped", {"deposed": self.leadership.deposed})
            await self.close()
            logger.info("guard stopped")

    async def _tick_triage(self) -> None:
        """An empty batch, so triage's sweeps (log rules gone quiet, storms calmed) run also
        while no monitor reports anything (a container's log stream that stopped)."""
        if self.intake.queue.empty():
            await self.intake.put(Observation())

    def _deposed(self) -> None:
        """The lease was lost: stop at once (``guard run`` exits 3; the supervisor restarts
        this replica as a standby). Claims still in flight are refused by their fence."""
        self.stop()

    def stop(self) -> None:
        self._stop.set()

    def _audit(self, action: str, data: dict[str, Any]) -> None:
        with self.db.session() as session:
            audit.append(session, actor="guard", action=action, subject="guard", data=data)

    async def close(self) -> None:
        await self.monitoring.close()
