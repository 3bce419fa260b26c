"""Learning, after a run cured an incident or a human's fix did not: a human's fix that cured it
is learned as a skill, then the incident is closed (``guard.agent.closing``: resolved and
remembered); a fix that did not is given back to the human with the reason. Called by
remediation; it calls only closing, and returns what happened (``Settled``) to its caller.

"Cured" means caused (``guard.agent.causation``): the fault held just before the fix
(``before``, kept on the incident as ``fault_before`` so a restart still knows) and stayed gone
through ``agent.settle`` after verification. A fix that ran while the fault was already gone is
not learned (the incident is resolved, the timeline and the answer say why); one after which
the fault came back within the settle period did not cure it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from loguru import logger
from sqlmodel import col, select

from guard.actions import ActionRegistry
from guard.agent.causation import Causation
from guard.agent.closing import Closer
from guard.agent.steps import StepRunner
from guard.harness.crashpoints import reached
from guard.incidents.lifecycle import Lifecycle
from guard.skills.library import SkillLibrary
from guard.skills.revisions import close_steps
from guard.skills.writer import LearnedSkill, SkillWriter
from guard.store.models import HUMAN_FIX, Incident, IncidentState, RemediationRun, RunOrigin

if TYPE_CHECKING:
    from guard.skills.remote import SkillsRemote


@dataclass(frozen=True)
class Settled:
    """How a finished run settled its incident."""

    verified: bool  # the incident is resolved: the run cured it (or its fault was gone before)
    message: str  # what the human was told (a human command's outcome)
    skill: str | None  # the skill that cured it (ran, or learned from the fix); None: none


class Learner:
    def __init__(
        self,
        lifecycle: Lifecycle,
        closer: Closer,
        writer: SkillWriter,
        actions: ActionRegistry,
        runner: StepRunner,
        library: SkillLibrary,
        remote: SkillsRemote | None = None,
    ) -> None:
        self.lifecycle = lifecycle
        self.closer = closer
        self.writer = writer
        self.actions = actions
        self.runner = runner
        self.library = library
        self.remote = remote  # skills.git_remote: a learned skill is pushed for review
        self.causation = Causation(runner.db, runner.verifier, runner.settings.agent.settle)

    async def before(self, incident_id: int) -> dict[str, Any]:
        """What to keep on the incident right before a human's fix runs: whether its fault
        holds then (``fault_before``)."""
        inc = self.lifecycle.load(incident_id)
        assert inc is not None
        return {"fault_before": (await self.causation.before(inc)).as_details()}

    async def settle(
        self, run: RemediationRun, inc: Incident, verified: bool, reason: str
    ) -> Settled:
        """Close the incident a skill's ``run`` cured; learn a human's fix if ``verified`` and
        close the incident, or give it back; either way, tell the human how it went."""
        assert inc.id is not None
        if run.origin == RunOrigin.skill:  # a known skill cured it: nothing new to learn
            assert verified
            text = f"healed by skill {run.skill}: {reason}"
            await self.closer.resolve(
                inc.id,
                text,
                resolved_by=run.skill,
                resolution=reason,
                skill=run.skill,
                healed_by="skill",  # what guard.reports.counts counts
            )
            return Settled(True, text, run.skill)
        assert run.fix is not None
        held = (inc.details or {}).get("fault_before") or {}
        if verified and held.get("holds") is False:
            return await self._not_learned(run, inc, reason, str(held.get("reason")))
        back = await self.causation.after(inc, reason) if verified else None
        if back is not None and back.holds:  # it came back within agent.settle: not cured
            verified, reason = False, back.reason
        if not verified:
            text = (
                f"Your fix `{run.fix}` did not cure incident #{inc.id}: {reason}. "
                "Nothing was saved; the incident is waiting for you again."
            )
            self.lifecycle.move(
                inc.id,
                IncidentState.awaiting_human,
                f"{run.approved_by}'s fix did not cure it: {reason}",
                learned_message=text,
            )
            await self.closer.tell(inc, IncidentState.awaiting_human, text)
            return Settled(False, text, None)
        saved, learned = self._save(run, inc, reason)
        reached("learning.committed")
        detail: dict[str, Any] = {}
        if learned is not None:
            detail = {"learned_skill": learned.name, "skill_commit": learned.commit}
            if learned.existed:  # the same lesson again: no new skill to count
                detail["skill_known"] = True
            if self.remote is not None and not learned.existed:  # pushed for review
                from guard.skills.remote import publish_learned  # its forge client: httpx

                saved += await asyncio.to_thread(
                    publish_learned, self.remote, learned, self.library
                )
        text = f"Your fix `{run.fix}` cured incident #{inc.id} (verified: {reason}); {saved}."
        if learned is not None and learned.diff and not learned.existed:
            text += f" Its steps changed:\n{learned.diff}"
        self.lifecycle.note(
            inc.id,
            "learned",
            text,
            fault_before=held.get("reason") or "not checked",
            settled=back.reason if back is not None else "",
            **detail,
        )
        name = learned.name if learned is not None else ""
        await self.closer.resolve(
            inc.id,
            f"healed by {run.approved_by}'s fix, verified; {saved}",
            resolved_by=name or HUMAN_FIX,
            resolution=f"fix `{run.fix}` by {run.approved_by}",
            skill=name,
            tell=text,
            learned_message=text,
            healed_by="human",
            **detail,
        )
        return Settled(True, text, name or None)

    async def _not_learned(
        self, run: RemediationRun, inc: Incident, verdict: str, why: str
    ) -> Settled:
        """The fault was already gone when the fix ran: resolve the incident, learn nothing."""
        assert inc.id is not None
        text = (
            f"Your fix `{run.fix}` ran on incident #{inc.id} but is not learned: {why}. "
            f"Nothing was saved; the incident is resolved ({verdict})."
        )
        self.lifecycle.note(inc.id, "not_learned", f"ran; not learned: {why}", fix=run.fix)
        await self.closer.resolve(
            inc.id,
            f"the fault is gone ({verdict}); {run.approved_by}'s fix ran but did not cause it",
            resolved_by=HUMAN_FIX,
            resolution=f"the fault went away by itself; fix `{run.fix}` ran, not learned",
            tell=text,
            learned_message=text,
        )
        return Settled(True, text, None)

    def _save(
        self, run: RemediationRun, inc: Incident, verdict: str
    ) -> tuple[str, LearnedSkill | None]:
        """Write the skill (the script exactly as it ran); what to say, and the skill (None:
        saving failed)."""
        assert run.id is not None and run.fix is not None
        action: str | None = None
        args: dict[str, Any] = {}
        approval_only = False  # an action that must always be asked for (docker.exec)
        if self.actions.looks_like_action(run.fix):
            parsed, args = self.actions.parse(run.fix)
            action = parsed.name
            approval_only = bool(getattr(parsed, "approval_only", False))
        ran = next(
            (r.result["step"].get("stdin") for r in self.runner.steps(run.id) if r.kind == "run"),
            None,
        )
        proposal = inc.details.get("proposal")
        proposed_by = (
            f"model {proposal.get('model')}"
            if isinstance(proposal, dict) and proposal.get("fix") == run.fix
            else None
        )
        approver = run.approved_by or "human"
        try:
            learned = self.writer.write(
                inc,
                run.fix,
                action=action,
                args=args,
                approver=approver
                if proposed_by is None
                else f"{approver} (proposed by {proposed_by})",
                verdict=verdict,
                script=ran if action is None else None,
                proposed_by=proposed_by,
                approval_only=approval_only,
                revises=self._matched(inc),
            )
        except Exception as exc:
            logger.opt(exception=exc).error("could not save the learned skill")
            return f"but saving the skill failed: {exc}", None
        if learned.revision > 1 and not learned.existed and learned.branch is None:
            with self.runner.db.session() as session:  # the old steps' ladder is done
                close_steps(session, learned.name, learned.revision)
        if learned.revision > 1 and learned.branch is not None:  # under review in git
            return proposed(learned), learned
        saved = (
            f"saved as revision {learned.revision} of skill {learned.name}"
            + (f" (commit {learned.commit[:10]})" if learned.commit else "")
            + "; it asks first until it is trusted"
            if learned.revision > 1 and not learned.existed
            else f"saved as skill {learned.name}"
            + (f" (commit {learned.commit[:10]})" if learned.commit else "")
            if not learned.existed
            else f"already known as skill {learned.name}"
        )
        return saved, learned

    def _matched(self, inc: Incident) -> list[str]:
        """The skills this fix revises, first choice first: those that ran on the incident
        (newest first: they failed, since a human's fix cured it), then those that matched
        it (not trusted, so the human was asked)."""
        with self.runner.db.session() as session:
            ran = session.exec(
                select(RemediationRun.skill)
                .where(
                    RemediationRun.incident_id == inc.id,
                    RemediationRun.origin == RunOrigin.skill,
                )
                .order_by(col(RemediationRun.id).desc())
            ).all()
        return [*ran, *(c.skill.name for c in self.library.candidates(inc))]


def proposed(learned: LearnedSkill) -> str:
    """What the human is told of a revision committed for review (``skills.review``)."""
    if learned.existed:
        return (
            f"not saved: revision {learned.revision} of skill {learned.name} is already under "
            f"review ({learned.branch}); merge or delete that branch first"
        )
    return (
        f"proposed as revision {learned.revision} of skill {learned.name}"
        + (f" (commit {learned.commit[:10]})" if learned.commit else "")
        + f"; revision {learned.revision - 1} runs until it is merged"
    )
