"""Orchestration of one incident: recall -> diagnose -> decide (``policy``) -> remediate, or
investigate and ask a human. The ``Agent`` (``guard.agent.loop``) hands it each incident; its
parts come from the composition root (``guard.app.compose``)."""

from __future__ import annotations

import asyncio

from loguru import logger

from guard.agent import limits, policy
from guard.agent.investigation import Investigation
from guard.agent.parts import AgentParts
from guard.agent.tools import Toolbox
from guard.domain.exceptions import InvalidTransition, NotLeader
from guard.domain.records import utcnow
from guard.harness import spans
from guard.incidents import silences
from guard.incidents.lifecycle import ENDED, WORKABLE
from guard.sandbox.base import SandboxGrants
from guard.skills.library import Candidate
from guard.store import mutes
from guard.store.models import Incident, IncidentState
from guard.telemetry.metrics import record_remediation

S = IncidentState


class IncidentHandler:
    """How the agent works one incident, with the parts it is given."""

    def __init__(self, parts: AgentParts) -> None:
        self.parts = parts

    async def handle(self, incident_id: int, *, unmuted: bool = False) -> None:
        """Work the incident if it needs work. ``unmuted``: a human just unmuted it, so only
        a mute or silence in force now holds it (not one its last signal fell in)."""
        async with self.parts.slots:
            inc = self.parts.lifecycle.load(incident_id)
            if inc is None or inc.state not in WORKABLE:
                return
            spans.mark("agent.picked", inc.target)
            if inc.state == S.open and await asyncio.to_thread(self._hushed, inc, unmuted):
                self.parts.lifecycle.release(incident_id)  # a reopened incident may still hold one
                return
            await self.decide_or_escalate(inc)

    def _hushed(self, inc: Incident, unmuted: bool = False) -> bool:
        """Mute ``inc`` if a mute of its target or a silence matching it is in force now, or
        was when its last signal was seen (a line written during a silence stays silenced
        however late triage lands it: ``triage.symptom_wait`` holds a dependant's line); it
        is recorded, and nobody is asked or paged until that ends. Whether it was."""
        assert inc.id is not None
        now = utcnow()
        moments = [now] if unmuted or inc.last_seen >= now else [now, inc.last_seen]
        muted = next(
            filter(None, (mutes.active(self.parts.db, inc.target, at) for at in moments)), None
        )
        with self.parts.db.session() as session:
            silence = next(
                filter(None, (silences.matching(session, inc, at) for at in moments)), None
            )
        if silence is not None and (muted is None or silence.expires_at > muted.until):
            reason, details = silences.hushing(silence)
            self.parts.lifecycle.move(inc.id, S.muted, reason, **details)
            return True
        if muted is not None:
            self.parts.lifecycle.move(
                inc.id,
                S.muted,
                f"{inc.target} is muted by {muted.by} until {muted.until:%Y-%m-%d %H:%M} UTC",
                muted_until=muted.until.isoformat(),
            )
            return True
        return False

    async def decide_or_escalate(self, inc: Incident) -> None:
        """``decide``; a failure escalates the incident to a human."""
        assert inc.id is not None
        try:
            await self.decide(inc)
        except NotLeader as exc:  # deposed mid-way: the new leader resumes the incident
            logger.warning("incident #{}: not handled here: {}", inc.id, exc)
        except Exception as exc:
            if isinstance(exc, InvalidTransition):
                now = self.parts.lifecycle.load(inc.id)
                if now is not None and now.state in ENDED:  # it recovered before it was taken
                    logger.info("incident #{} is {}: nothing to do", inc.id, now.state)
                    return
            logger.opt(exception=exc).error("incident #{}: the agent failed", inc.id)
            record_remediation("escalated")
            question = policy.agent_failed_question(exc)
            await self.parts.asker.ask(inc.id, [], "", question, escalate=True)

    async def recall(self, inc: Incident) -> list[Candidate]:
        """The skills that match ``inc``, best first (ranked with semantic memory)."""
        return (await self.parts.recaller.recall(inc)).candidates

    async def decide(self, inc: Incident) -> None:
        """Recall, diagnose and decide until the incident is resolved or a human is asked."""
        assert inc.id is not None
        while True:
            recalled = await self.parts.recaller.recall(inc)
            candidates, similar = recalled.candidates, recalled.similar
            self.parts.lifecycle.note(
                inc.id,
                "recalled",
                f"{len(candidates)} matching skill(s); {len(similar)} similar past incident(s)"
                + (f" ({recalled.memory_note})" if recalled.memory_note else ""),
                candidates=[
                    {"skill": c.skill.name, "score": c.score, "reasons": c.reasons}
                    for c in candidates
                ],
                similar=[
                    {"incident": s.incident_id, "score": s.score, "resolution": s.resolution}
                    for s in similar
                ],
            )
            self.parts.lifecycle.assign(inc.id, "recall and diagnosis")
            evidence = await self.parts.diagnoser.diagnose(inc, candidates)
            with self.parts.db.session() as session:
                history = limits.history(session, candidates, inc.target)
            no_shell = await self._no_shell(candidates)
            decision = policy.decide(inc, candidates, history, self.parts.limits, no_shell)
            if isinstance(decision, policy.AskHuman):
                if decision.guarded_by is not None:  # a runaway guard stopped it: escalate
                    record_remediation(decision.guarded_by)
                found = await self.investigate(inc, evidence) if self.parts.investigator else None
                if found is not None:
                    evidence = f"{evidence}\n\n{found.findings()}".strip()
                self.parts.trajectories.start(inc, evidence, found)
                await self.parts.asker.ask(
                    inc.id,
                    list(decision.options),
                    evidence,
                    decision.question,
                    escalate=decision.escalate,
                    proposal=found.proposal if found else None,
                )
                return
            self.parts.trajectories.start(
                inc, evidence, None, stop_reason="trusted_skill", skill=decision.skill.name
            )
            self.parts.lifecycle.note(
                inc.id,
                "decided",
                f"running trusted skill {decision.skill.name}",
                skill=decision.skill.name,
                reasons=decision.candidate.reasons,
            )
            remediator = self.parts.remediator
            if await remediator.run_skill(inc.id, decision.skill, approved_by="trusted skill"):
                return
            reloaded = self.parts.lifecycle.load(inc.id)
            if reloaded is None or reloaded.state != S.remediating:
                return
            inc = reloaded

    async def _no_shell(self, candidates: list[Candidate]) -> str:
        """Why the candidates' shell steps cannot run here ("": they can, or there are none)."""
        if not any(s.run is not None for c in candidates for s in c.skill.spec.steps):
            return ""
        return await self.parts.runner.no_shell()

    # -- the model ------------------------------------------------------------------------------

    def toolbox(self, inc: Incident) -> Toolbox:
        """The tools for ``inc``: the investigation's, and an MCP client's (``guard.mcp``)."""
        book = self.parts.books.get(inc.monitor_id)
        return Toolbox(
            inc,
            self.parts.runner,
            # never the remedy's grants: text the model read (a log line) may steer its commands
            book.investigation_sandbox if book is not None else SandboxGrants(),
            self.parts.library,
            self.parts.memory,
            self.parts.actions,
            self.parts.settings.sandbox.timeout,
        )

    async def investigate(self, inc: Incident, evidence: str) -> Investigation | None:
        """The model's read-only investigation of ``inc``, noted on its timeline (None: no
        model, or the investigation itself broke: the human is asked without it)."""
        assert inc.id is not None
        if self.parts.investigator is None:
            return None
        tools = self.toolbox(inc)
        try:
            found = await self.parts.investigator.investigate(inc, evidence, tools)
        except Exception as exc:
            logger.opt(exception=exc).error("incident #{}: the investigation failed", inc.id)
            self.parts.lifecycle.note(
                inc.id, "investigated", f"the investigation failed: {exc}", stop_reason="error"
            )
            return None
        self.parts.lifecycle.note(
            inc.id,
            "investigated",
            found.findings()[:2000],
            model=found.model,
            stop_reason=found.stop_reason,
            usage=found.usage,
            proposal=found.proposal.as_dict() if found.proposal else None,
        )
        return found
