"""The agent loop: one worker per incident, with bounded concurrency.

recall -> diagnose -> decide -> remediate -> verify -> resolve, or ask a human / escalate.

- Recall ranks the skills whose triggers match, and boosts those that resolved similar past
  incidents (semantic memory); the reasons are recorded on the incident.
- Diagnose runs read-only evidence gathering (skill diagnostics in the sandbox, container logs).
- Decide picks the best *trusted* skill that the runaway guards allow; otherwise it asks.
- Remediate runs the skill's steps through ``StepRunner`` (persisted before and after each
  step), and always ends by re-running the check that fired.
- A failed run is retried only while the rate limit and the circuit breaker allow; then the
  incident escalates to a human. It never loops.
- Every end of a remediation (a run verified or failed, denied, escalated, refused by the rate
  limit or the breaker) is counted in ``guard_remediations_total{outcome}``.
- A sandbox stays warm only while its incident needs work: it is released when the incident
  resolves (by a remedy, or because triage saw the check pass again) or is muted.
Human answers (``guard approve|deny|reply``, Telegram) arrive as ``HumanCommand`` rows that the
agent polls, so the CLI and the gateway work whether or not they share Guard's process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from datetime import timedelta
from typing import Any

from loguru import logger
from sqlmodel import col, select

from guard.actions import ActionRegistry
from guard.agent import limits
from guard.agent.steps import StepRunner, ctx_incident
from guard.agent.verify import Verifier
from guard.agent.workers import IncidentWorkers
from guard.config import Settings
from guard.memory import IncidentMemory, open_memory
from guard.memory.semantic import summary
from guard.metrics import record_remediation
from guard.notify.base import HumanRequest, IncidentUpdate, Notifier, SkillOption
from guard.playbooks.models import Playbook
from guard.records import IncidentEvent, utcnow
from guard.redact import Redactor
from guard.sandbox.base import SandboxGrants
from guard.skills.library import Candidate, Skill, SkillLibrary
from guard.skills.model import Step
from guard.skills.writer import SkillWriter
from guard.store import mutes
from guard.store.db import Database
from guard.store.models import Approval, HumanCommand, Incident, IncidentState, RemediationRun
from guard.store.state import get_state, put_state
from guard.triage.states import record, transition

S = IncidentState
HUMAN_FIX = "human-fix"
HEARTBEAT = "agent:heartbeat"


def agent_alive(db: Database, within: float = 15.0) -> bool:
    """Whether a ``guard run`` agent has beaten its heart recently."""
    from datetime import datetime

    with db.session() as session:
        beat = get_state(session, HEARTBEAT)
    if not beat.get("at"):
        return False
    return (utcnow() - datetime.fromisoformat(beat["at"])).total_seconds() < within


STARTING_EVENTS = frozenset({"opened", "reopened", "flapping"})
# Triage events after which an incident needs no sandbox: its warm one is released.
ENDED_STATES = frozenset({S.resolved.value, S.muted.value})


class Agent:
    def __init__(
        self,
        settings: Settings,
        db: Database,
        playbooks: list[Playbook],
        *,
        notifier: Notifier | None = None,
        sandboxes: Any = None,
        actions: ActionRegistry | None = None,
        library: SkillLibrary | None = None,
        memory: IncidentMemory | None = None,
    ) -> None:
        from guard.notify.console import ConsoleNotifier

        self.settings = settings
        self.db = db
        self.specs = {m.id: m for book in playbooks for m in book.monitors}
        self.books = {m.id: book for book in playbooks for m in book.monitors}
        self.library = library or SkillLibrary(settings.skills_dir)
        self.actions = actions or ActionRegistry()
        self.notifier: Notifier = notifier or ConsoleNotifier(db)
        self.memory = memory or open_memory(settings)
        self.redactor = Redactor()
        self.redactor.register_all(settings.secret_values(), name="config")
        if sandboxes is None:
            from guard.sandbox.pool import SandboxPool

            sandboxes = SandboxPool(settings.sandbox, redactor=self.redactor)
        self.sandboxes = sandboxes
        self.runner = StepRunner(
            settings, db, self.actions, Verifier(db, self.specs, settings), sandboxes, self.redactor
        )
        s = settings.skills
        self.writer = SkillWriter(
            self.library,
            trust=s.learned_trust,
            git_commit=s.git_commit,
            git_author=s.git_author,
            verify_timeout=settings.agent.verify_timeout,
        )
        self._incidents = asyncio.Semaphore(settings.agent.max_concurrent_incidents)
        self._remediations = asyncio.Semaphore(settings.agent.max_concurrent_remediations)
        self.workers = IncidentWorkers(lambda incident_id: self.handle(incident_id))
        self._loop: asyncio.AbstractEventLoop | None = None

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
                loop.call_soon_threadsafe(self.submit, ev.incident_id)
            elif ev.type == "resolved" or ev.state in ENDED_STATES:
                loop.call_soon_threadsafe(self._release_when_idle, ev.incident_id)

    def submit(self, incident_id: int, coro: Any = None) -> None:
        """Work on an incident: ``coro``, or a look at it (see ``IncidentWorkers``)."""
        self.workers.start(incident_id, coro)

    async def run(self, stop: asyncio.Event) -> None:
        """Resume unfinished work, then serve human commands until ``stop`` is set."""
        self._loop = asyncio.get_running_loop()
        await asyncio.to_thread(self._reap_sandboxes)
        self._spawn(asyncio.to_thread(self._warm_memory))
        await self.resume()
        try:
            while not stop.is_set():
                await asyncio.to_thread(self.heartbeat)
                await self.poll_commands()
                await asyncio.to_thread(self.expire_approvals)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.settings.agent.poll_interval)
        finally:
            await self.shutdown()

    def _warm_memory(self) -> None:
        try:
            self.memory.warm()
        except Exception as exc:
            logger.warning("semantic memory unavailable: {}", exc)

    def heartbeat(self) -> None:
        """Tell CLI processes that a running agent will pick up their commands."""
        with self.db.session() as session:
            put_state(session, HEARTBEAT, {"at": utcnow().isoformat(), "pid": os.getpid()})

    def _reap_sandboxes(self) -> None:
        """Remove sandbox containers left behind by a Guard that died (no orphans)."""
        if self.settings.sandbox.backend != "docker":
            return
        try:
            from guard.sandbox.docker import connect, reap_orphans

            client = connect(timeout=30)
            try:
                n = reap_orphans(client, only_dead_owners=True)
            finally:
                client.close()
            if n:
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
        from guard.agent.human import reset_interrupted

        self._loop = asyncio.get_running_loop()
        if n := await asyncio.to_thread(reset_interrupted, self.db):
            logger.info("reset {} human command(s) a restart interrupted", n)
        with self.db.session() as session:
            runs = session.exec(
                select(RemediationRun).where(RemediationRun.status == "running")
            ).all()
            fresh = session.exec(
                select(Incident).where(col(Incident.state).in_([S.open.value, S.diagnosing.value]))
            ).all()
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

    # -- the loop for one incident --------------------------------------------------------------

    def _load(self, incident_id: int) -> Incident | None:
        with self.db.session() as session:
            return session.get(Incident, incident_id)

    def _move(self, incident_id: int, to: IncidentState, reason: str, **details: Any) -> Incident:
        with self.db.session() as session:
            inc = session.get(Incident, incident_id)
            assert inc is not None
            if inc.state != to.value:
                transition(session, inc, to, actor="agent", reason=reason)
            if details:
                inc.details = {**inc.details, **details}
                session.add(inc)
            return inc

    def _note(self, incident_id: int, type_: str, message: str, **data: Any) -> None:
        with self.db.session() as session:
            inc = session.get(Incident, incident_id)
            assert inc is not None
            record(session, inc, type_, message, actor="agent", **data)

    async def handle(self, incident_id: int) -> None:
        async with self._incidents:
            inc = self._load(incident_id)
            if inc is None or inc.state not in (S.open.value, S.diagnosing.value):
                return
            muted = await asyncio.to_thread(mutes.active, self.db, inc.target)
            if muted is not None and inc.state == S.open.value:
                self._move(
                    incident_id,
                    S.muted,
                    f"{inc.target} is muted by {muted.by} until {muted.until:%Y-%m-%d %H:%M} UTC",
                )
                self._release(incident_id)  # a reopened incident may still hold one
                return
            try:
                await self.decide(inc)
            except Exception as exc:
                logger.opt(exception=exc).error("incident #{}: the agent failed", incident_id)
                record_remediation("escalated")
                await self.ask(incident_id, [], "", f"Guard's agent failed: {exc}", escalate=True)

    async def recall(self, inc: Incident) -> list[Candidate]:
        """Matching skills, boosted by what resolved similar incidents before."""
        # In a thread: a trigger's regex may need the (budgeted) Python worker.
        candidates = await asyncio.to_thread(self.library.candidates, inc)
        similar = []
        try:  # in a thread: the memory helper may be starting (a second) or stuck
            found = await asyncio.to_thread(self.memory.search, summary(inc), 5)
            similar = [r for r in found if r.incident_id != inc.id and r.score >= 0.5]
        except Exception as exc:  # memory is advice, never a reason to stop
            logger.warning("semantic memory unavailable: {}", exc)
        boosted = []
        for c in candidates:
            hits = [r for r in similar if r.skill == c.skill.name]
            if hits:
                c = Candidate(
                    c.skill,
                    c.score + hits[0].score,
                    [
                        *c.reasons,
                        f"resolved similar incident #{hits[0].incident_id} "
                        f"(similarity {hits[0].score:.2f})",
                    ],
                )
            boosted.append(c)
        boosted.sort(key=lambda c: (-c.score, c.skill.name))
        assert inc.id is not None
        self._note(
            inc.id,
            "recalled",
            f"{len(boosted)} matching skill(s); {len(similar)} similar past incident(s)",
            candidates=[
                {"skill": c.skill.name, "score": c.score, "reasons": c.reasons} for c in boosted
            ],
            similar=[
                {"incident": r.incident_id, "score": r.score, "resolution": r.resolution}
                for r in similar
            ],
        )
        return boosted

    async def diagnose(self, inc: Incident, candidates: list[Candidate]) -> str:
        """Collect read-only evidence; keep it on the incident."""
        assert inc.id is not None
        parts: list[str] = []
        steps: list[tuple[Step, Skill | None]] = []
        book = self.books.get(inc.monitor_id)
        for diag in book.diagnostics if book is not None else []:
            if not diag.kinds or inc.kind in diag.kinds:
                steps.append((Step(run=diag.run, timeout=diag.timeout), None))
        if candidates:
            steps += [(s, candidates[0].skill) for s in candidates[0].skill.spec.diagnostics]
        if inc.source == "docker" and not steps:
            steps.append((Step(action="docker.logs", args={"tail": 30}), None))
        for step, skill in steps:
            try:
                if step.kind == "action":
                    assert step.action is not None
                    out = await self.runner.action(step.action, dict(step.args), inc)
                else:
                    ctx = {"incident": ctx_incident(inc)}
                    out = await self.runner.sandbox_run(
                        step, inc, skill, self.grants_for(inc, skill), ctx
                    )
                parts.append(f"$ {step.describe()}\n{out.summary}")
            except Exception as exc:
                parts.append(f"$ {step.describe()}\n(could not run: {exc})")
        evidence = self.redactor.redact("\n".join(parts))[:8000]
        if evidence:
            self._move(inc.id, S.diagnosing, "evidence collected", evidence=evidence)
            self._note(inc.id, "diagnosed", evidence[:1000])
        return evidence

    def refusal(self, skill: Skill, target: str) -> tuple[str, str] | None:
        """Why ``skill`` may not run on ``target`` now, as (``blocked`` by the breaker or
        ``rate_limited``, the reason), or None."""
        with self.db.session() as session:
            block = limits.blocked(session, skill.name, target)
            if block is not None:
                return "blocked", f"skill {skill.name} is disabled for {target}: {block.reason}"
            why = limits.rate_limited(session, skill.name, target, skill.spec.limits)
            return ("rate_limited", why) if why else None

    async def decide(self, inc: Incident) -> None:
        assert inc.id is not None
        while True:
            candidates = await self.recall(inc)
            self._move(inc.id, S.diagnosing, "recall and diagnosis")
            evidence = await self.diagnose(inc, candidates)
            refused: list[str] = []
            guards: set[str] = set()
            runnable: list[Candidate] = []  # what a human may still approve
            chosen = None
            for c in candidates:
                refusal = self.refusal(c.skill, inc.target)
                if refusal:
                    guards.add(refusal[0])
                    refused.append(refusal[1])
                    continue
                runnable.append(c)
                if c.skill.spec.trust == "trusted" and chosen is None:
                    chosen = c
            if chosen is None:
                if guards:  # a runaway guard stopped it: the incident escalates
                    record_remediation("blocked" if "blocked" in guards else "rate_limited")
                question = ("; ".join(refused) + ". ") if refused else ""
                question += (
                    "Approve a skill, or send a fix."
                    if candidates
                    else "No skill matches. Send a fix."
                )
                await self.ask(inc.id, runnable, evidence, question, escalate=bool(refused))
                return
            self._note(
                inc.id,
                "decided",
                f"running trusted skill {chosen.skill.name}",
                skill=chosen.skill.name,
                reasons=chosen.reasons,
            )
            verified = await self.remediate(inc.id, chosen.skill, approved_by="trusted skill")
            if verified:
                return
            reloaded = self._load(inc.id)
            if reloaded is None or reloaded.state != S.remediating.value:
                return
            inc = reloaded

    # -- remediation ----------------------------------------------------------------------------

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

    async def remediate(self, incident_id: int, skill: Skill, *, approved_by: str) -> bool:
        """Run ``skill`` on the incident; True when verified and resolved."""
        async with self._remediations:
            inc = self._move(
                incident_id,
                S.remediating,
                f"running skill {skill.name} (approved by {approved_by})",
            )
            with self.db.session() as session:
                run = RemediationRun(
                    incident_id=incident_id,
                    skill=skill.name,
                    target=inc.target,
                    approved_by=approved_by,
                )
                session.add(run)
            self.runner.plan(run, list(skill.spec.steps))
            return await self._execute(run, inc, skill)

    async def _resume_run(self, run: RemediationRun) -> None:
        async with self._incidents, self._remediations:
            inc = self._load(run.incident_id)
            if inc is None:
                return
            if inc.state != S.remediating.value:
                inc = self._move(run.incident_id, S.remediating, "resuming after a restart")
            skill = self.library.get(run.skill) if run.origin == "skill" else None
            await self._execute(run, inc, skill)

    async def _execute(self, run: RemediationRun, inc: Incident, skill: Skill | None) -> bool:
        assert run.id is not None and inc.id is not None
        run_id = run.id
        verified, reason = await self.runner.execute(run, inc, skill, self.grants_for(inc, skill))
        with self.db.session() as session:
            fresh = session.get(RemediationRun, run_id)
            assert fresh is not None
            fresh.status = "verified" if verified else "failed"
            fresh.finished_at = utcnow()
            fresh.message = reason
            session.add(fresh)
            run = fresh
        record_remediation(self.runner.outcome(run_id, verified))
        if run.origin == "human":
            from guard.agent.human import finish_human_fix

            await finish_human_fix(self, run, inc, verified, reason)
            return verified
        if verified:
            await self._resolved(inc, f"healed by skill {run.skill}: {reason}", skill=run.skill)
            return True
        await self._failed(inc, run, reason)
        return False

    async def _resolved(self, inc: Incident, reason: str, *, skill: str) -> None:
        assert inc.id is not None
        done = self._move(inc.id, S.resolved, reason, resolved_by=skill)
        logger.info("incident #{} resolved: {}", inc.id, reason)
        await self.remember(done, reason, skill)
        self._release(inc.id)
        if done.details.get("asked"):
            self._spawn(
                self.notifier.update(IncidentUpdate(inc.id, done.title, "resolved", reason))
            )

    async def remember(self, done: Incident, resolution: str, skill: str = "") -> None:
        """Store what resolved ``done`` in semantic memory (off the event loop; never raises)."""
        try:
            await asyncio.to_thread(self.memory.remember, done, resolution=resolution, skill=skill)
        except Exception as exc:
            logger.warning("could not store incident #{} in semantic memory: {}", done.id, exc)

    async def _failed(self, inc: Incident, run: RemediationRun, reason: str) -> None:
        assert inc.id is not None
        self._note(
            inc.id,
            "remediation_failed",
            f"skill {run.skill} did not cure it: {reason}",
            skill=run.skill,
            run=run.id,
        )
        with self.db.session() as session:
            fails = limits.consecutive_failures(session, run.skill, inc.target)
            if fails >= self.settings.agent.breaker_failures:
                limits.trip(
                    session, run.skill, inc.target, f"{fails} failed runs in a row (last: {reason})"
                )
        if fails >= self.settings.agent.breaker_failures:
            self._note(
                inc.id,
                "skill_disabled",
                f"skill {run.skill} disabled for {inc.target} after {fails} failed runs in a row",
                skill=run.skill,
            )

    def _release(self, incident_id: int) -> None:
        self._spawn(self.sandboxes.release(str(incident_id)))

    def _release_when_idle(self, incident_id: int) -> None:
        """Release the incident's sandbox once its worker (if one runs) is done with it."""
        self.workers.when_idle(incident_id, lambda: self._release(incident_id))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)

    # -- asking a human -------------------------------------------------------------------------

    def new_approval(self, incident_id: int, kind: str, skill: str | None = None) -> str:
        approval_id = secrets.token_urlsafe(16)  # 22 chars: fits Telegram's 64-byte limit
        with self.db.session() as session:
            session.add(
                Approval(
                    id=approval_id,
                    incident_id=incident_id,
                    kind=kind,
                    skill=skill,
                    expires_at=utcnow() + timedelta(seconds=self.settings.agent.approval_ttl),
                )
            )
        return approval_id

    async def ask(
        self,
        incident_id: int,
        candidates: list[Candidate],
        evidence: str,
        question: str,
        *,
        escalate: bool = False,
    ) -> None:
        to = S.escalated if escalate else S.awaiting_human
        inc = self._move(incident_id, to, question, asked=True)
        options = [
            SkillOption(
                c.skill.name,
                c.skill.description[:200],
                self.new_approval(incident_id, "skill", c.skill.name),
            )
            for c in candidates
        ]
        request = HumanRequest(
            incident_id=incident_id,
            title=inc.title,
            severity=inc.severity,
            target=inc.target,
            count=inc.count,
            evidence=evidence,
            options=options,
            deny_id=self.new_approval(incident_id, "deny"),
            mute_id=self.new_approval(incident_id, "mute"),
            question=question,
        )
        self._note(
            incident_id,
            "asked_human",
            question,
            options=[o.name for o in options],
            escalated=escalate,
        )
        try:
            await self.notifier.ask(request)
        except Exception as exc:
            logger.error("could not reach a human about incident #{}: {}", incident_id, exc)

    def expire_approvals(self) -> None:
        now = utcnow()
        with self.db.session() as session:
            stale = session.exec(
                select(Approval).where(
                    col(Approval.used_at).is_(None), col(Approval.expires_at) < now
                )
            ).all()
            for a in stale:
                a.used_at, a.used_by = now, "expired"
                session.add(a)

    # -- human commands -------------------------------------------------------------------------

    async def poll_commands(self) -> None:
        from guard.agent.human import process_command

        taken: list[HumanCommand] = []
        with self.db.session() as session:
            queued = session.exec(
                select(HumanCommand)
                .where(HumanCommand.status == "queued")
                .order_by(col(HumanCommand.id))
            ).all()
            for cmd in queued:
                if self.workers.busy(cmd.incident_id) or any(
                    c.incident_id == cmd.incident_id for c in taken
                ):
                    continue  # the incident's worker is busy: the command waits its turn
                cmd.status = "running"
                session.add(cmd)
                taken.append(cmd)
        for cmd in taken:
            self.submit(cmd.incident_id, process_command(self, cmd))
