"""The agent: one worker per incident, with bounded concurrency; orchestration only.

intake -> recall -> diagnose -> decide (``policy``) -> remediate -> verify -> resolve, or ask a
human / escalate.

- Intake: triage's incident events start a worker per incident (``IncidentWorkers``); a muted
  target's incident is muted. Human answers (``guard approve|deny|reply``, Telegram) are polled
  from the store and run in the same worker (``HumanAnswers``), so the CLI and the gateway work
  whether or not they share Guard's process.
- Recall ranks the matching skills with semantic memory (``Recaller``); diagnose gathers
  read-only evidence (``Diagnoser``); ``policy.decide`` picks a trusted skill the runaway guards
  allow, or asks a human (``Asker``).
- With a model configured (``llm.provider``), an incident that would go to a human is first
  investigated (``Investigator``, read-only tools); its proposal is the first option shown,
  and runs only once a human approves it. Every handling is recorded as a trajectory.
- ``Remediator`` runs and settles; a failed run is retried only while the rate limit and the
  circuit breaker allow, then the incident escalates. It never loops.
- A sandbox stays warm only while its incident needs work: ``Lifecycle.release`` frees it when
  the incident resolves (by a remedy, or because triage saw the check pass again) or is muted.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Coroutine
from datetime import timedelta
from typing import Any

from loguru import logger
from sqlmodel import col, select

from guard import cluster, spans
from guard.actions import ActionRegistry
from guard.agent import limits, policy
from guard.agent.asking import Asker
from guard.agent.closing import Closer, spawn
from guard.agent.diagnosis import Diagnoser
from guard.agent.human import HumanAnswers
from guard.agent.investigation import Investigation, Investigator
from guard.agent.learning import Learner
from guard.agent.recall import Recaller
from guard.agent.remediation import Remediator
from guard.agent.steps import StepRunner
from guard.agent.tools import Toolbox
from guard.agent.verify import Verifier
from guard.agent.workers import IncidentWorkers
from guard.config import Settings
from guard.crashpoints import reached
from guard.exceptions import InvalidTransition, NotLeader
from guard.incidents.commands import beat, reset_interrupted, take_queued
from guard.incidents.lifecycle import ENDED, WORKABLE, Lifecycle, unattended
from guard.llm import ModelProvider, build_provider
from guard.memory import IncidentMemory, open_memory
from guard.metrics import record_remediation
from guard.notify.base import Notifier
from guard.notify.console import ConsoleNotifier
from guard.playbooks.models import MonitorSpec, Playbook
from guard.records import IncidentEvent, utcnow
from guard.redact import Redactor
from guard.sandbox.base import SandboxGrants, SandboxPool
from guard.sandbox.pool import WarmSandboxPool
from guard.skills.library import Candidate, SkillLibrary
from guard.skills.remote import remote_for
from guard.skills.writer import SkillWriter
from guard.store import mutes
from guard.store.db import Database
from guard.store.models import (
    HumanCommand,
    Incident,
    IncidentState,
    IncidentTimeline,
    RemediationRun,
    RunStatus,
)

S = IncidentState
STARTING_EVENTS = frozenset({"opened", "reopened", "flapping"})
SWEEP_EVERY = 15.0  # seconds between looks for incidents nobody works on (``Agent.sweep``)
SWEEP_AFTER = 30.0  # an incident open (or working, unmoved) this long with no worker is swept
SWEEP_RETRIES = 3  # resumptions of one incident whose worker failed, before leaving it be


class Agent:
    def __init__(
        self,
        settings: Settings,
        db: Database,
        playbooks: list[Playbook],
        *,
        notifier: Notifier | None = None,
        sandboxes: SandboxPool | None = None,
        actions: ActionRegistry | None = None,
        library: SkillLibrary | None = None,
        memory: IncidentMemory | None = None,
    ) -> None:
        self.settings = settings
        self.db = db
        # shared with the verifier, the remediator and the diagnoser: ``use_playbooks`` updates
        # them in place
        self._specs: dict[str, MonitorSpec] = {}
        self._books: dict[str, Playbook] = {}
        self.use_playbooks(playbooks)
        specs, books = self._specs, self._books
        self.library = library or SkillLibrary(settings.skills_dir)
        self.actions = actions or ActionRegistry()
        self.notifier: Notifier = notifier or ConsoleNotifier(db)
        self.memory = memory or open_memory(settings)
        self.redactor = Redactor()
        self.redactor.register_all(settings.secret_values(), name="config")
        self.sandboxes: SandboxPool = sandboxes or WarmSandboxPool(
            settings.sandbox, redactor=self.redactor
        )
        self.lifecycle = Lifecycle(db)
        self.lifecycle.on_release(self._release_sandbox)
        self.runner = StepRunner(
            settings, db, self.actions, Verifier(db, specs, settings), self.sandboxes, self.redactor
        )
        s = settings.skills
        self.skills_remote = remote_for(settings)  # None without skills.git_remote
        self.writer = SkillWriter(
            self.library,
            trust=s.learned_trust,
            git_commit=s.git_commit,
            git_author=s.git_author,
            verify_timeout=settings.agent.verify_timeout,
            review=s.review != "direct",
            taken=self.skills_remote.taken if self.skills_remote else None,
        )
        self.recaller = Recaller(self.library, self.memory)
        closer = Closer(self.lifecycle, self.memory, self.notifier)
        learner = Learner(
            self.lifecycle,
            closer,
            self.writer,
            self.actions,
            self.runner,
            self.library,
            self.skills_remote,
        )
        self.remediator = Remediator(
            settings, db, self.lifecycle, self.runner, self.library, closer, learner, books
        )
        self.diagnoser = Diagnoser(
            self.lifecycle, self.runner, self.remediator, books, self.redactor
        )
        self.asker = Asker(settings, db, self.lifecycle, self.notifier)
        self.answers = HumanAnswers(
            settings, db, self.lifecycle, self.remediator, self.recaller, self.library, self.actions
        )
        self.trajectories = self.remediator.trajectories
        self.investigator = (
            Investigator(settings.llm, self.model, self.redactor) if settings.llm.enabled else None
        )
        self.limits = policy.Limits(breaker_failures=settings.agent.breaker_failures)
        self._incidents = asyncio.Semaphore(settings.agent.max_concurrent_incidents)
        self.workers = IncidentWorkers(lambda incident_id: self.handle(incident_id))
        self._resumed: dict[int, int] = {}  # incident -> times the sweep resumed it
        self._loop: asyncio.AbstractEventLoop | None = None

    def use_playbooks(self, playbooks: list[Playbook]) -> None:
        """What the playbooks say from now on (a reload): monitors to verify against, the
        diagnostics and sandbox grants of each monitor's playbook."""
        specs = {m.id: m for book in playbooks for m in book.monitors}
        books = {m.id: book for book in playbooks for m in book.monitors}
        self._specs.clear()
        self._specs.update(specs)
        self._books.clear()
        self._books.update(books)

    # -- intake ---------------------------------------------------------------------------------

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Accept incident events from now on (before monitors start, so none is missed)."""
        self._loop = loop

    def on_events(self, events: list[IncidentEvent]) -> None:
        """Triage hook (called from triage's worker thread)."""
        loop = self._loop
        if loop is None or not self.settings.agent.enabled:
            return
        for ev in events:
            if ev.type in STARTING_EVENTS:
                reached("agent.opened_not_taken")
                loop.call_soon_threadsafe(self.submit, ev.incident_id)
            elif ev.type == "resolved" or ev.state in ENDED:
                loop.call_soon_threadsafe(self._release_when_idle, ev.incident_id)

    def submit(self, incident_id: int, job: Coroutine[Any, Any, None] | None = None) -> None:
        """Work on an incident: ``job``, or a look at it (see ``IncidentWorkers``)."""
        self.workers.start(incident_id, job)

    async def run(self, stop: asyncio.Event) -> None:
        """Resume unfinished work, then serve human commands until ``stop`` is set."""
        self._loop = asyncio.get_running_loop()
        await self._reap_sandboxes()
        spawn(asyncio.to_thread(self._warm_memory))
        await self.resume()
        try:
            swept = time.monotonic()
            while not stop.is_set():
                try:  # a store error (locked, full, away) skips a round, never ends the loop
                    await asyncio.to_thread(beat, self.db, os.getpid())
                    await self.poll_commands()
                    if time.monotonic() - swept >= SWEEP_EVERY:
                        swept = time.monotonic()
                        await self.sweep()
                    await asyncio.to_thread(self.asker.expire_approvals)
                except Exception as exc:
                    logger.warning("agent: {}: {}; trying again", type(exc).__name__, exc)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.settings.agent.poll_interval)
        finally:
            await self.shutdown()

    def _warm_memory(self) -> None:
        try:
            self.memory.warm()
        except Exception as exc:
            logger.warning("semantic memory unavailable: {}", exc)

    async def _reap_sandboxes(self) -> None:
        """Remove sandbox containers left behind by a Guard that died (no orphans)."""
        try:
            if n := await self.sandboxes.reap():
                logger.info("removed {} sandbox container(s) left by an earlier Guard", n)
        except Exception as exc:
            logger.warning("could not reap old sandboxes: {}", exc)

    async def shutdown(self) -> None:
        await self.workers.close()
        await self.notifier.flush()
        await self.sandboxes.close()
        await asyncio.to_thread(self.memory.close)

    async def drain(self) -> None:
        """Wait for every incident worker (``guard run --once`` and the CLI)."""
        await self.workers.drain()

    async def resume(self) -> None:
        """After a restart: finish interrupted runs; pick up incidents nobody handled."""
        self._loop = asyncio.get_running_loop()
        if n := await asyncio.to_thread(reset_interrupted, self.db):
            logger.info("reset {} human command(s) a restart interrupted", n)
        with self.db.session() as session:
            runs = session.exec(
                select(RemediationRun).where(RemediationRun.status == RunStatus.running)
            ).all()
            fresh = session.exec(select(Incident).where(col(Incident.state).in_(WORKABLE))).all()
            stranded = session.exec(select(Incident).where(Incident.state == S.remediating)).all()
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

    async def _resume_run(self, run: RemediationRun) -> None:
        async with self._incidents:
            await self.remediator.resume(run)
            inc = self.lifecycle.load(run.incident_id)
            if inc is not None and inc.state == S.remediating:  # the resumed skill failed
                await self._decide(inc)  # as after any failed run: decide again

    async def _settle_run(self, incident_id: int) -> None:
        async with self._incidents:
            with self.db.session() as session:
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
            inc = self.lifecycle.load(incident_id)
            if inc is None or inc.state != S.remediating:
                return
            if run is not None:
                await self.remediator.settle(run, inc)
                inc = self.lifecycle.load(incident_id)
            if inc is not None and inc.state == S.remediating:  # no run, or a failed skill
                await self._decide(inc)

    async def sweep(self) -> None:
        """Take up the incidents that no worker holds but should: one left ``open`` (a hand-off
        from triage lost to a store error: the database locked, the disk full) is taken; one
        left ``diagnosing`` or ``remediating`` by a worker that failed mid-way is resumed as
        after a restart (a step that ran is not run again), at most ``SWEEP_RETRIES`` times."""
        if not self.settings.agent.enabled or not cluster.current().is_leader():
            return
        cutoff = utcnow() - timedelta(seconds=SWEEP_AFTER)
        try:
            found = await asyncio.to_thread(unattended, self.db, cutoff)
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
        inc = self.lifecycle.load(incident_id)
        if inc is None or inc.state not in (S.diagnosing, S.remediating):
            return
        if inc.state == S.diagnosing:
            await self.handle(incident_id)
            return
        with self.db.session() as session:
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

    async def poll_commands(self) -> None:
        """Take the queued human answers, one per incident whose worker is free (only the
        leader takes them: a deposed one leaves them to the new leader)."""
        if not cluster.current().is_leader():
            return
        for cmd in await asyncio.to_thread(
            take_queued, self.db, self.workers.busy, cluster.current().fence
        ):
            self.submit(cmd.incident_id, self.process_command(cmd))

    async def process_command(self, cmd: HumanCommand) -> None:
        """Carry out one human answer (in the incident's worker)."""
        await self.answers.process(cmd)

    # -- the loop for one incident --------------------------------------------------------------

    async def handle(self, incident_id: int) -> None:
        async with self._incidents:
            inc = self.lifecycle.load(incident_id)
            if inc is None or inc.state not in WORKABLE:
                return
            spans.mark("agent.picked", inc.target)
            muted = await asyncio.to_thread(mutes.active, self.db, inc.target)
            if muted is not None and inc.state == S.open:
                self.lifecycle.move(
                    incident_id,
                    S.muted,
                    f"{inc.target} is muted by {muted.by} until {muted.until:%Y-%m-%d %H:%M} UTC",
                )
                self.lifecycle.release(incident_id)  # a reopened incident may still hold one
                return
            await self._decide(inc)

    async def _decide(self, inc: Incident) -> None:
        """``decide``; a failure escalates the incident to a human."""
        assert inc.id is not None
        try:
            await self.decide(inc)
        except NotLeader as exc:  # deposed mid-way: the new leader resumes the incident
            logger.warning("incident #{}: not handled here: {}", inc.id, exc)
        except InvalidTransition as exc:
            now = self.lifecycle.load(inc.id)
            if now is not None and now.state in ENDED:  # it recovered before the agent got to it
                logger.info("incident #{} is {}: nothing to do", inc.id, now.state)
                return
            logger.opt(exception=exc).error("incident #{}: the agent failed", inc.id)
            record_remediation("escalated")
            await self.asker.ask(inc.id, [], "", policy.agent_failed_question(exc), escalate=True)
        except Exception as exc:
            logger.opt(exception=exc).error("incident #{}: the agent failed", inc.id)
            record_remediation("escalated")
            await self.asker.ask(inc.id, [], "", policy.agent_failed_question(exc), escalate=True)

    async def recall(self, inc: Incident) -> list[Candidate]:
        """The skills that match ``inc``, best first (ranked with semantic memory)."""
        return (await self.recaller.recall(inc))[0]

    async def decide(self, inc: Incident) -> None:
        """Recall, diagnose and decide until the incident is resolved or a human is asked."""
        assert inc.id is not None
        while True:
            candidates, similar = await self.recaller.recall(inc)
            self.lifecycle.note(
                inc.id,
                "recalled",
                f"{len(candidates)} matching skill(s); {len(similar)} similar past incident(s)",
                candidates=[
                    {"skill": c.skill.name, "score": c.score, "reasons": c.reasons}
                    for c in candidates
                ],
                similar=[
                    {"incident": s.incident_id, "score": s.score, "resolution": s.resolution}
                    for s in similar
                ],
            )
            self.lifecycle.assign(inc.id, "recall and diagnosis")
            evidence = await self.diagnoser.diagnose(inc, candidates)
            with self.db.session() as session:
                history = limits.history(session, candidates, inc.target)
            decision = policy.decide(inc, candidates, history, self.limits)
            if isinstance(decision, policy.AskHuman):
                if decision.guarded_by is not None:  # a runaway guard stopped it: escalate
                    record_remediation(decision.guarded_by)
                found = await self.investigate(inc, evidence) if self.investigator else None
                if found is not None:
                    evidence = f"{evidence}\n\n{found.findings()}".strip()
                self.trajectories.start(inc, evidence, found)
                await self.asker.ask(
                    inc.id,
                    list(decision.options),
                    evidence,
                    decision.question,
                    escalate=decision.escalate,
                    proposal=found.proposal if found else None,
                )
                return
            self.trajectories.start(
                inc, evidence, None, stop_reason="trusted_skill", skill=decision.skill.name
            )
            self.lifecycle.note(
                inc.id,
                "decided",
                f"running trusted skill {decision.skill.name}",
                skill=decision.skill.name,
                reasons=decision.candidate.reasons,
            )
            if await self.remediator.run_skill(inc.id, decision.skill, approved_by="trusted skill"):
                return
            reloaded = self.lifecycle.load(inc.id)
            if reloaded is None or reloaded.state != S.remediating:
                return
            inc = reloaded

    # -- the model ------------------------------------------------------------------------------

    def model(self) -> ModelProvider:
        """A fresh provider for one investigation (``llm`` and its fallbacks)."""
        provider = build_provider(self.settings.llm, self.redactor)
        assert provider is not None, "llm.provider is none"
        return provider

    async def investigate(self, inc: Incident, evidence: str) -> Investigation | None:
        """The model's read-only investigation of ``inc``, noted on its timeline (None: no
        model, or the investigation itself broke: the human is asked without it)."""
        assert inc.id is not None
        if self.investigator is None:
            return None
        book = self._books.get(inc.monitor_id)
        tools = Toolbox(
            inc,
            self.runner,
            # never the remedy's grants: text the model read (a log line) may steer its commands
            book.investigation_sandbox if book is not None else SandboxGrants(),
            self.library,
            self.memory,
            self.actions,
            self.settings.sandbox.timeout,
        )
        try:
            found = await self.investigator.investigate(inc, evidence, tools)
        except Exception as exc:
            logger.opt(exception=exc).error("incident #{}: the investigation failed", inc.id)
            self.lifecycle.note(
                inc.id, "investigated", f"the investigation failed: {exc}", stop_reason="error"
            )
            return None
        self.lifecycle.note(
            inc.id,
            "investigated",
            found.findings()[:2000],
            model=found.model,
            stop_reason=found.stop_reason,
            usage=found.usage,
            proposal=found.proposal.as_dict() if found.proposal else None,
        )
        return found

    # -- sandboxes ------------------------------------------------------------------------------

    def _release_sandbox(self, incident_id: int) -> None:
        spawn(self.sandboxes.release(str(incident_id)))

    def _release_when_idle(self, incident_id: int) -> None:
        """Release the incident's sandbox once its worker (if one runs) is done with it."""
        self.workers.when_idle(incident_id, lambda: self.lifecycle.release(incident_id))
