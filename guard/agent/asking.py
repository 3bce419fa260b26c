"""Asking a human: the question, its options (single-use, expiring approvals), and the message.

The options shown are kept on the incident (``details.options``), so a bare approval
(``guard approve N``, a channel's approve button) runs the first option the human saw. A model's
proposal is offered only if a human can read it whole (``guard.util.commandtext.oddities``); its
option carries the exact command and its digest, and its approval is bound to that digest.
"""

from __future__ import annotations

import asyncio
import secrets
from datetime import timedelta
from typing import Any

from loguru import logger
from sqlmodel import col, select

from guard.actions.fixforms import fix_forms
from guard.agent import policy
from guard.agent.tools import Proposal
from guard.config import Settings
from guard.domain.records import utcnow
from guard.harness.crashpoints import reached
from guard.incidents.lifecycle import Lifecycle
from guard.notify import related
from guard.notify.base import HumanRequest, Notifier, SkillOption, joined
from guard.skills.library import Candidate
from guard.store.db import Database
from guard.store.models import Approval, IncidentState
from guard.store.state import put_state
from guard.util.commandtext import approval_key, digest, oddities


class Asker:
    def __init__(
        self, settings: Settings, db: Database, lifecycle: Lifecycle, notifier: Notifier
    ) -> None:
        self.settings = settings
        self.db = db
        self.lifecycle = lifecycle
        self.notifier = notifier

    def new_approval(
        self, incident_id: int, kind: str, skill: str | None = None, bound: str = ""
    ) -> str:
        """A single-use approval; ``bound``: the digest of the command it may run, and only
        while the command still has it."""
        approval_id = secrets.token_urlsafe(
            16
        )  # 22 chars: fits a channel's button payload limit (64 bytes)
        with self.db.session() as session:
            if bound:
                put_state(session, approval_key(approval_id), {"digest": bound})
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
        options: list[Candidate],
        evidence: str,
        question: str,
        *,
        escalate: bool = False,
        proposal: Proposal | None = None,
    ) -> None:
        """Move the incident to ``awaiting_human`` (or ``escalated``) and ask, offering a
        model's ``proposal`` first, then ``options`` best first."""
        reached("agent.asking")
        to = IncidentState.escalated if escalate else IncidentState.awaiting_human
        if proposal is not None and (odd := oddities(proposal.fix)):
            question = (
                f"{proposal.model} proposed a command Guard will not offer: {'; '.join(odd)}. "
                f"{question}"
            )
            proposal = None
        if proposal is not None:
            question = (
                f"{proposal.model} proposes the command shown (the first option; it runs "
                f"only if you approve it). {question}"
            )
        forms = await asyncio.to_thread(fix_forms, self.settings)
        question = forms.question(question)  # offers only what can run here
        names = policy.options_shown(proposal is not None, options)
        extra: dict[str, Any] = {"proposal": proposal.as_dict()} if proposal else {}
        inc = self.lifecycle.move(incident_id, to, question, asked=True, options=names, **extra)
        shown = [
            SkillOption(
                c.skill.name,
                c.skill.offer_text()[:300],
                self.new_approval(incident_id, "skill", c.skill.name),
            )
            for c in options
        ]
        if proposal is not None:
            text = (
                f"proposed by {proposal.model}, confidence {proposal.confidence:.2f}: "
                f"{proposal.reason}"
            )[:300]
            bound = digest(proposal.fix)
            approval = self.new_approval(incident_id, "skill", policy.PROPOSAL, bound)
            shown.insert(0, SkillOption(policy.PROPOSAL, text, approval, proposal.fix, bound))
        request = HumanRequest(
            incident_id=incident_id,
            title=inc.title,
            severity=inc.severity,
            target=inc.target,
            count=inc.count,
            evidence=evidence,
            options=shown,
            deny_id=self.new_approval(incident_id, "deny"),
            mute_id=self.new_approval(incident_id, "mute"),
            ack_id=self.new_approval(incident_id, "ack") if self.settings.escalation.active else "",
            question=question,
            url=self.settings.incident_url(incident_id),
            fix_hint=forms.hint,
        )
        self.lifecycle.note(incident_id, "asked_human", question, options=names, escalated=escalate)
        try:
            await self.notifier.ask(request)
        except Exception as exc:
            logger.error("could not reach a human about incident #{}: {}", incident_id, exc)
        await self.show_related(incident_id)

    async def show_related(self, incident_id: int) -> None:
        """Name the incident's related signals in its question (``guard.notify.related``)."""
        try:
            await asyncio.to_thread(related.refresh, self.db, incident_id)
        except Exception as exc:
            logger.warning("incident #{}: related signals not shown: {}", incident_id, exc)

    async def joined(self, incident_id: int) -> None:
        """A signal joined the incident: its question shows it, and the routes it adds are
        paged if the question is out (a joined signal is never quieter than it was alone)."""
        await self.show_related(incident_id)
        try:
            await joined(self.notifier, incident_id)
        except Exception as exc:
            logger.error("incident #{}: the joined signal's routes not paged: {}", incident_id, exc)

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
