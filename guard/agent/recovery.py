"""Recovery: after a restart, or a worker that failed mid-way, finish what was interrupted
(a step that ran is not run again) and take up incidents nobody works on; an asked incident
with related signals is routed again (a join whose routing a restart cut short pages then).
The ``Agent`` (``guard.agent.loop``) runs it; it resumes work through the incident handler
(``guard.agent.orchestration``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from datetime import timedelta
from typing import Any

from loguru import logger
from sqlmodel import col, select

from guard import cluster
from guard.agent.orchestration import IncidentHandler
from guard.agent.parts import AgentParts
from guard.agent.workers import IncidentWorkers
from guard.domain.records import utcnow
from guard.incidents.commands import reset_interrupted
from guard.incidents.lifecycle import WORKABLE, unattended
from guard.store import holds
from guard.store.correlation import RelatedSignal
from guard.store.models import Incident, IncidentState, IncidentTimeline, RemediationRun, RunStatus

S = IncidentState
SWEEP_EVERY = 15.0  # seconds between looks for incidents nobody works on (``Agent.sweep``)
SWEEP_AFTER = 30.0  # an incident open (or working, unmoved) this long with no worker is swept
SWEEP_RETRIES = 3  # resumptions of one incident whose worker failed, before leaving it be


class Recovery:
    """Resumption of interrupted work: it hands incidents to the workers, which work them
    through the handler."""

    def __init__(
        self, parts: AgentParts, handler: IncidentHandler, workers: IncidentWorkers
    ) -> None:
        self.parts = parts
        self.handler = handler
        self.workers = workers
        self._resumed: dict[int, int] = {}  # incident -> times the sweep resumed it

    def submit(self, incident_id: int, job: Coroutine[Any, Any, None] | None = None) -> None:
        """Work on an incident: ``job``, or a look at it (see ``IncidentWorkers``)."""
        self.workers.start(incident_id, job)

    async def reap_sandboxes(self) -> None:
        """Remove sandbox containers left behind by a Guard that died (no orphans)."""
        try:
            if n := await self.parts.sandboxes.reap():
                logger.info("removed {} sandbox container(s) left by an earlier Guard", n)
        except Exception as exc:
            logger.warning("could not reap old sandboxes: {}", exc)

    async def resume(self) -> None:
        """After a restart: finish interrupted runs; pick up incidents nobody handled."""
        if n := await asyncio.to_thread(reset_interrupted, self.parts.db):
            logger.info("reset {} human command(s) a restart interrupted", n)
        with self.parts.db.session() as session:
            runs = session.exec(
                select(RemediationRun).where(RemediationRun.status == RunStatus.running)
            ).all()
            fresh = session.exec(select(Incident).where(col(Incident.state).in_(WORKABLE))).all()
            stranded = session.exec(select(Incident).where(Incident.state == S.remediating)).all()
            joined = session.exec(  # asked, with signals joined: a join a restart cut short
                select(RelatedSignal.incident_id)
                .join(Incident, col(Incident.id) == col(RelatedSignal.incident_id))
                .where(col(Incident.state).in_((S.awaiting_human, S.escalated)))
                .distinct()
            ).all()
            running = {run.id for run in runs if run.id is not None}
            ended = holds.close_expired(session, running, self.parts.settings.agent.settle)
        for hold in ended:  # a remedy's hold whose time ran out while Guard was down
            logger.info(
                "incident #{}: its remedy's hold on {} ended", hold.incident_id, hold.target
            )
        working = {run.incident_id for run in runs}
        for inc in stranded:
            if inc.id is not None and inc.id not in working:  # ended, not settled: a restart
                logger.info("incident #{}: settling its finished remediation", inc.id)
                self.submit(inc.id, self._settle_run(inc.id))
        for run in runs:
            logger.info(
                "incident #{}: resuming interrupted remediation {} ({})",
                run.incident_id,
                run.id,
                run.skill,
            )
            self.submit(run.incident_id, self._resume_run(run))
        for inc in fresh:
            assert inc.id is not None
            self.submit(inc.id)
        for incident_id in joined:  # routed again: pages nobody twice (keyed by episode)
            self.submit(incident_id, self.parts.asker.joined(incident_id))

    async def _resume_run(self, run: RemediationRun) -> None:
        async with self.parts.slots:
            await self.parts.remediator.resume(run)
            inc = self.parts.lifecycle.load(run.incident_id)
            if inc is not None and inc.state == S.remediating:  # the resumed skill failed
                await self.handler.decide_or_escalate(inc)  # as after any failed run: decide again

    async def _settle_run(self, incident_id: int) -> None:
        async with self.parts.slots:
            with self.parts.db.session() as session:
                run = session.exec(
                    select(RemediationRun)
                    .where(RemediationRun.incident_id == incident_id)
                    .order_by(col(RemediationRun.id).desc())
                ).first()
                moved = session.exec(  # the move to remediating that this run belongs to
                    select(IncidentTimeline.at)
                    .where(
                        IncidentTimeline.incident_id == incident_id,
                        IncidentTimeline.to_state == S.remediating,
                    )
                    .order_by(col(IncidentTimeline.id).desc())
                ).first()
            if run is not None and moved is not None and run.started_at < moved:
                run = None  # an older run: the restart came before this move's run was stored
            inc = self.parts.lifecycle.load(incident_id)
            if inc is None or inc.state != S.remediating:
                return
            if run is not None:
                await self.parts.remediator.settle(run, inc)
                inc = self.parts.lifecycle.load(incident_id)
            if inc is not None and inc.state == S.remediating:  # no run, or a failed skill
                await self.handler.decide_or_escalate(inc)

    async def sweep(self) -> None:
        """Take up the incidents that no worker holds but should: one left ``open`` (a hand-off
        from triage lost to a store error: the database locked, the disk full) is taken; one
        left ``diagnosing`` or ``remediating`` by a worker that failed mid-way is resumed as
        after a restart (a step that ran is not run again), at most ``SWEEP_RETRIES`` times."""
        if not self.parts.settings.agent.enabled or not cluster.current().is_leader():
            return
        cutoff = utcnow() - timedelta(seconds=SWEEP_AFTER)
        try:
            found = await asyncio.to_thread(unattended, self.parts.db, cutoff)
        except Exception as exc:  # the store is still failing: the next sweep tries again
            logger.warning("could not look for unattended incidents: {}", exc)
            return
        for incident_id, state in found:
            if self.workers.busy(incident_id):
                continue
            if state == S.open:
                logger.warning("incident #{}: open and not taken; taking it now", incident_id)
                self.submit(incident_id)
                continue
            tries = self._resumed[incident_id] = self._resumed.get(incident_id, 0) + 1
            if tries > SWEEP_RETRIES:
                if tries == SWEEP_RETRIES + 1:
                    logger.error(
                        "incident #{}: still {} after {} resumptions; left for a human's answer "
                        "or a restart",
                        incident_id,
                        state.value,
                        SWEEP_RETRIES,
                    )
                continue
            logger.warning("incident #{}: {} with no worker; resuming it", incident_id, state.value)
            self.submit(incident_id, self._recover(incident_id))

    async def _recover(self, incident_id: int) -> None:
        """Resume one incident that a failed worker left working, as a restart would."""
        inc = self.parts.lifecycle.load(incident_id)
        if inc is None or inc.state not in (S.diagnosing, S.remediating):
            return
        if inc.state == S.diagnosing:
            await self.handler.handle(incident_id)
            return
        with self.parts.db.session() as session:
            run = session.exec(
                select(RemediationRun).where(
                    RemediationRun.incident_id == incident_id,
                    RemediationRun.status == RunStatus.running,
                )
            ).first()
        if run is not None:
            await self._resume_run(run)
        else:
            await self._settle_run(incident_id)
