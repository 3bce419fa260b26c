"""Orchestration of one incident: recall -> diagnose -> decide (``policy``) -> remediate, or
investigate and ask a human. Part of ``Agent`` (``guard.agent.loop``), which wires the parts
named here."""

from __future__ import annotations

import asyncio

from loguru import logger

from guard.actions import ActionRegistry
from guard.agent import limits, policy
from guard.agent.asking import Asker
from guard.agent.diagnosis import Diagnoser
from guard.agent.investigation import Investigation, Investigator
from guard.agent.recall import Recaller
from guard.agent.remediation import Remediator
from guard.agent.steps import StepRunner
from guard.agent.tools import Toolbox
from guard.agent.trajectories import TrajectoryLog
from guard.config import Settings
from guard.domain.exceptions import InvalidTransition, NotLeader
from guard.harness import spans
from guard.incidents import silences
from guard.incidents.lifecycle import ENDED, WORKABLE, Lifecycle
from guard.llm import ModelProvider, build_provider
from guard.memory import IncidentMemory
from guard.playbooks.models import Playbook
from guard.redact import Redactor
from guard.sandbox.base import SandboxGrants
from guard.skills.library import Candidate, SkillLibrary
from guard.store import mutes
from guard.store.db import Database
from guard.store.models import Incident, IncidentState
from guard.telemetry.metrics import record_remediation

S = IncidentState


class Orchestration:
    """How the agent works one incident, given the parts ``Agent`` wires."""

    settings: Settings
    db: Database
    lifecycle: Lifecycle
    library: SkillLibrary
    memory: IncidentMemory
    actions: ActionRegistry
    redactor: Redactor
    runner: StepRunner
    recaller: Recaller
    diagnoser: Diagnoser
    remediator: Remediator
    asker: Asker
    trajectories: TrajectoryLog
    investigator: Investigator | None
    limits: policy.Limits
    _books: dict[str, Playbook]
    _incidents: asyncio.Semaphore

    async def handle(self, incident_id: int) -> None:
        async with self._incidents:
            inc = self.lifecycle.load(incident_id)
            if inc is None or inc.state not in WORKABLE:
                return
            spans.mark("agent.picked", inc.target)
            if inc.state == S.open and await asyncio.to_thread(self._hushed, inc):
                self.lifecycle.release(incident_id)  # a reopened incident may still hold one
                return
            await self._decide(inc)

    def _hushed(self, inc: Incident) -> bool:
        """Mute ``inc`` if a mute of its target or a silence matching it is in force (it is
        recorded, and nobody is asked or paged until that ends); whether it was."""
        assert inc.id is not None
        muted = mutes.active(self.db, inc.target)
        with self.db.session() as session:
            silence = silences.matching(session, inc)
        if silence is not None and (muted is None or silence.expires_at > muted.until):
            reason, details = silences.hushing(silence)
            self.lifecycle.move(inc.id, S.muted, reason, **details)
            return True
        if muted is not None:
            self.lifecycle.move(
                inc.id,
                S.muted,
                f"{inc.target} is muted by {muted.by} until {muted.until:%Y-%m-%d %H:%M} UTC",
                muted_until=muted.until.isoformat(),
            )
            return True
        return False

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

    def toolbox(self, inc: Incident) -> Toolbox:
        """The tools for ``inc``: the investigation's, and an MCP client's (``guard.mcp``)."""
        book = self._books.get(inc.monitor_id)
        return Toolbox(
            inc,
            self.runner,
            # never the remedy's grants: text the model read (a log line) may steer its commands
            book.investigation_sandbox if book is not None else SandboxGrants(),
            self.library,
            self.memory,
            self.actions,
            self.settings.sandbox.timeout,
        )

    async def investigate(self, inc: Incident, evidence: str) -> Investigation | None:
        """The model's read-only investigation of ``inc``, noted on its timeline (None: no
        model, or the investigation itself broke: the human is asked without it)."""
        assert inc.id is not None
        if self.investigator is None:
            return None
        tools = self.toolbox(inc)
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
