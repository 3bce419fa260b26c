"""Remediation: run a skill or a human's fix on an incident, step by step, and settle it.

A run is persisted before it starts (``RemediationRun`` and its ``AgentStep``s), so a restart
resumes it without repeating a step. It always ends by re-running the check that fired. A
skill's run that did not cure the incident counts toward the circuit breaker; every other
finished run goes on to the ``Learner`` (which hands it on to closing): remediation ->
learning -> closing, each returning what it did to the one before. At most
``agent.max_concurrent_remediations`` runs at once (``slot``).
"""

from __future__ import annotations

import asyncio

from guard.agent import limits, policy
from guard.agent.holding import Holding
from guard.agent.learning import Learner, Settled
from guard.agent.steps import StepRunner
from guard.agent.trajectories import TrajectoryLog
from guard.config import Settings
from guard.domain.records import utcnow
from guard.harness.crashpoints import reached
from guard.incidents.lifecycle import Lifecycle
from guard.playbooks.models import Playbook
from guard.sandbox.base import SandboxGrants
from guard.skills import ladder
from guard.skills.library import Skill, SkillLibrary
from guard.skills.model import Step
from guard.store.db import Database
from guard.store.models import (
    HUMAN_FIX,
    Incident,
    IncidentState,
    RemediationRun,
    RunOrigin,
    RunStatus,
)
from guard.telemetry.metrics import record_remediation

S = IncidentState


class Remediator:
    def __init__(
        self,
        settings: Settings,
        db: Database,
        lifecycle: Lifecycle,
        runner: StepRunner,
        library: SkillLibrary,
        learner: Learner,
        books: dict[str, Playbook],
    ) -> None:
        self.settings = settings
        self.db = db
        self.lifecycle = lifecycle
        self.runner = runner
        self.library = library
        self.learner = learner
        self.books = books
        self.limits = policy.Limits(breaker_failures=settings.agent.breaker_failures)
        self.slot = asyncio.Semaphore(settings.agent.max_concurrent_remediations)
        self.trajectories = TrajectoryLog(db)
        self.holding = Holding(settings, db, lifecycle, books)

    def grants_for(self, inc: Incident, skill: Skill | None) -> SandboxGrants:
        """The playbook's grants plus the skill's (skills are reviewed in git)."""
        book = self.books.get(inc.monitor_id)
        base = book.sandbox if book is not None else SandboxGrants()
        if skill is None:
            return base
        extra = skill.spec.grants
        return SandboxGrants(
            network=extra.network or base.network,
            secrets=list(dict.fromkeys([*base.secrets, *extra.secrets])),
            mounts=list(dict.fromkeys([*base.mounts, *extra.mounts])),
        )

    async def run_skill(self, incident_id: int, skill: Skill, *, approved_by: str) -> bool:
        """Run ``skill`` on the incident; True when verified and resolved."""
        if not await self._free(incident_id):
            return False
        async with self.slot:
            inc = self.lifecycle.move(
                incident_id,
                S.remediating,
                f"running skill {skill.name} (approved by {approved_by})",
            )
            run = self._start(
                RemediationRun(
                    incident_id=incident_id,
                    skill=skill.name,
                    target=inc.target,
                    approved_by=approved_by,
                ),
                list(skill.spec.steps),
                inc,
            )
            return (await self.execute(run, inc, skill)).verified

    async def run_fix(self, incident_id: int, step: Step, *, fix: str, actor: str) -> Settled:
        """Run a human's fix (one step, as written); how it settled (learned if verified)."""
        if not await self._free(incident_id):
            return Settled(False, "refused: another incident's remedy still holds the target", None)
        async with self.slot:
            before = await self.learner.before(incident_id)  # is the fault there to cure?
            inc = self.lifecycle.move(
                incident_id, S.remediating, f"running {actor}'s fix: {fix}", **before
            )
            run = self._start(
                RemediationRun(
                    incident_id=incident_id,
                    skill=HUMAN_FIX,
                    target=inc.target,
                    origin=RunOrigin.human,
                    approved_by=actor,
                    fix=fix,
                ),
                [step],
                inc,
            )
            return await self.execute(run, inc, None)

    async def _free(self, incident_id: int) -> bool:
        """One remedy per target: wait out another incident's hold on it (or be refused)."""
        inc = self.lifecycle.load(incident_id)
        return inc is None or await self.holding.free(inc)

    def _start(self, run: RemediationRun, steps: list[Step], inc: Incident) -> RemediationRun:
        """Store the run and its hold on the target together, before any step acts."""
        with self.db.session() as session:
            session.add(run)
            session.flush()
            self.holding.place(session, run, inc, steps)
        self.runner.plan(run, steps)
        reached("remedy.held")
        return run

    async def resume(self, run: RemediationRun) -> None:
        """Finish a run a restart interrupted (its completed steps are not repeated)."""
        async with self.slot:
            inc = self.lifecycle.load(run.incident_id)
            if inc is None:
                return
            if inc.state != S.remediating:
                inc = self.lifecycle.move(
                    run.incident_id, S.remediating, "resuming after a restart"
                )
            skill = self.library.get(run.skill) if run.origin == RunOrigin.skill else None
            await self.execute(run, inc, skill)

    async def execute(self, run: RemediationRun, inc: Incident, skill: Skill | None) -> Settled:
        """Run ``run``'s pending steps, record how it ended, and settle the incident."""
        assert run.id is not None and inc.id is not None
        run_id = run.id
        verified, reason = await self.runner.execute(run, inc, skill, self.grants_for(inc, skill))
        self.holding.ended(run_id)  # its verification ended: the settle period starts
        reached("verify.before_state")
        run = self._finish(run_id, verified, reason, skill)
        record_remediation(self.runner.outcome(run_id, verified))
        return await self.settle(run, inc)

    async def settle(self, run: RemediationRun, inc: Incident) -> Settled:
        """Settle the incident after its finished ``run``: count a skill's failure here; hand
        any other outcome on to learning, which closes the incident or gives it back to the
        human (also after a restart that came between the run's end and this)."""
        assert inc.id is not None
        verified, reason = run.status == RunStatus.verified, run.message
        if run.origin == RunOrigin.skill:
            self.trajectories.settle(inc.id, verified=verified, skill=run.skill)
            self._climbed(inc.id, run)
            if not verified:
                self._failed(inc, run, reason)
                return Settled(False, f"skill {run.skill} did not cure it: {reason}", None)
        settled = await self.learner.settle(run, inc, verified, reason)
        if run.origin == RunOrigin.human:
            self.trajectories.settle(inc.id, verified=verified, skill=settled.skill)
        return settled

    def _finish(
        self, run_id: int, verified: bool, reason: str, skill: Skill | None
    ) -> RemediationRun:
        """Store the verdict, and the ladder step it causes, in one transaction."""
        with self.db.session() as session:
            run = session.get(RemediationRun, run_id)
            assert run is not None
            run.status = RunStatus.verified if verified else RunStatus.failed
            run.finished_at = utcnow()
            run.message = reason
            session.add(run)
            reached("verdict.stored")
            ladder.after_verdict(session, run, skill, self.settings.skills)
            return run

    def _climbed(self, incident_id: int, run: RemediationRun) -> None:
        """Note on the incident the ladder step this run's verdict caused, if any."""
        with self.db.session() as session:
            step = ladder.caused_by(session, run)
        if step is not None:
            self.lifecycle.note(incident_id, f"skill_{step.step}", step.reason, skill=run.skill)

    def _failed(self, inc: Incident, run: RemediationRun, reason: str) -> None:
        """A skill did not cure the incident: note it; trip the breaker after N in a row."""
        assert inc.id is not None
        self.lifecycle.note(
            inc.id,
            "remediation_failed",
            f"skill {run.skill} did not cure it: {reason}",
            skill=run.skill,
            run=run.id,
        )
        with self.db.session() as session:
            fails = limits.consecutive_failures(session, run.skill, inc.target)
            trips = policy.breaker_trips(fails, self.limits)
            if trips:
                limits.trip(session, run.skill, inc.target, policy.breaker_reason(fails, reason))
        if trips:
            self.lifecycle.note(
                inc.id,
                "skill_disabled",
                f"skill {run.skill} disabled for {inc.target} after {fails} failed runs in a row",
                skill=run.skill,
            )
