"""The autonomy ladder, driven by verdicts: demotion is automatic, promotion is proposed.

- **Demoted**: after ``skills.demote_after`` failed verifications in a row (on any target), a
  skill that ran unasked drops to ``approval``: the next incident goes to a human at once,
  with the failing runs as the reason. The step is written (and audited) in the transaction
  that stores the failing verdict, so a crash cannot leave one without the other.
- **Proposed**: after ``skills.promote_after`` verified recoveries within
  ``skills.promote_window`` (since any demotion) and no reversal in that window, a skill that
  needs approval is proposed for ``trust: trusted``: recorded and audited with the verdict,
  then put to review (``guard.skills.promotion`` on the git remote; with none, a question to an
  admin: ``guard.skills.localpromotion``). Never silent: it takes effect once merged or
  answered. Declined, the count starts again from the decline.
- **Stale**: unused (no run, and not learned) for ``skills.stale_after``: listed as stale,
  never deleted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlmodel import Session

from guard.config.skills import SkillsSettings
from guard.domain.records import utcnow
from guard.harness.crashpoints import reached
from guard.skills.library import Skill
from guard.skills.outcomes import Outcome, outcomes
from guard.skills.revisions import current, start, starts
from guard.store import audit
from guard.store.ladder import (
    DECLINED,
    DEMOTED,
    PROPOSED,
    LadderStep,
    last_closed,
    open_step,
    open_steps,
)
from guard.store.models import RemediationRun, RunOrigin, RunStatus

EVIDENCE_CHARS = 300
"""How much of each failing run's message a demotion keeps as its evidence."""


@dataclass(frozen=True)
class Standing:
    """Where one skill stands: its effective trust, and why when it differs from the file."""

    trust: str
    demoted: str | None = None  # the demotion's reason
    proposed: str | None = None  # the open promotion's reason
    stale: bool = False

    def as_dict(self) -> dict[str, object]:
        return {
            "trust": self.trust,
            "demoted": self.demoted,
            "promotion": self.proposed,
            "stale": self.stale,
        }


def after_verdict(
    session: Session, run: RemediationRun, skill: Skill | None, settings: SkillsSettings
) -> LadderStep | None:
    """The ladder step ``run``'s verdict causes, if any, added to the verdict's transaction."""
    if run.origin != RunOrigin.skill or skill is None or skill.pending:
        return None
    session.flush()
    began = start(skill)  # a revision starts over: its own runs and steps only
    out = outcomes(session, [run.skill], since=starts([skill]))[run.skill]
    demoted = open_step(session, skill.name, DEMOTED)
    if demoted is not None and not current(demoted, began):
        demoted = None
    if run.status == RunStatus.failed:
        if (
            demoted is None
            and skill.runs_unasked
            and out.consecutive_failures >= (settings.demote_after)
        ):
            return _record(session, skill.name, DEMOTED, demotion_reason(out), out.failures)
        return None
    proposed = open_step(session, skill.name, PROPOSED)
    if run.status != RunStatus.verified or (proposed is not None and current(proposed, began)):
        return None
    if skill.runs_unasked and demoted is None:
        return None
    since = utcnow() - timedelta(seconds=settings.promote_window)
    if began is not None:
        since = max(since, began)
    if demoted is not None:
        since = max(since, demoted.at)
    declined = last_closed(session, skill.name, PROPOSED, DECLINED)  # counted anew after it
    if declined is not None and declined.closed_at is not None and current(declined, began):
        since = max(since, declined.closed_at)
    healed = [at for at in out.verified_at if at >= since]
    if len(healed) < settings.promote_after or any(at >= since for at in out.reversed_at):
        return None
    reason = (
        f"{len(healed)} verified recoveries since {since:%Y-%m-%d %H:%M} UTC and no reversal "
        f"({out.summary()}): proposed for trust: trusted"
    )
    return _record(session, skill.name, PROPOSED, reason, [])


def demotion_reason(out: Outcome) -> str:
    failing = out.failures[-out.consecutive_failures :]
    runs = "; ".join(
        f"run #{r.id} on incident #{r.incident_id} ({r.target}): {r.message[:EVIDENCE_CHARS]}"
        for r in failing
    )
    return (
        f"skill {out.skill} was demoted to approval after {out.consecutive_failures} failed "
        f"verifications in a row: {runs}"
    )


def _record(
    session: Session, name: str, step: str, reason: str, runs: list[RemediationRun]
) -> LadderStep:
    row = LadderStep(skill=name, step=step, reason=reason, runs=[r.id for r in runs if r.id])
    session.add(row)
    session.flush()
    reached("ladder.step")
    action = "skill.demoted" if step == DEMOTED else "skill.promotion_proposed"
    audit.append(
        session,
        actor="guard",
        action=action,
        subject=f"skill:{name}",
        data={"reason": reason, "runs": row.runs},
    )
    return row


def standing(
    skill: Skill,
    out: Outcome | None,
    steps: list[LadderStep],
    settings: SkillsSettings,
    now: datetime | None = None,
) -> Standing:
    """``skill``'s effective trust and ladder state, from its open ``steps``."""
    began = start(skill)
    mine = [s for s in steps if s.skill == skill.name and current(s, began)]
    demoted = next((s.reason for s in mine if s.step == DEMOTED), None)
    proposed = next((s.reason for s in mine if s.step == PROPOSED), None)
    trust = "approval" if demoted and skill.spec.trust == "trusted" else skill.spec.trust
    return Standing(trust, demoted, proposed, is_stale(skill, out, settings, now))


def is_stale(
    skill: Skill, out: Outcome | None, settings: SkillsSettings, now: datetime | None = None
) -> bool:
    """Unused for ``stale_after``: no run since then, and not learned since then."""
    if settings.stale_after <= 0:
        return False
    since = (now or utcnow()) - timedelta(seconds=settings.stale_after)
    last = out.last_used if out is not None else None
    learned = (skill.spec.learned_from or {}).get("at")
    if learned:
        try:
            at = datetime.fromisoformat(str(learned))
        except ValueError:
            at = None
        if at is not None and (last is None or at > last):
            last = at
    return last is not None and last < since


def caused_by(session: Session, run: RemediationRun) -> LadderStep | None:
    """The ladder step ``run``'s verdict caused (a demotion names its failing runs)."""
    for step in (DEMOTED, PROPOSED):
        row = open_step(session, run.skill, step)
        if row is not None and (run.id in row.runs or (step == PROPOSED and row.at >= _end(run))):
            return row
    return None


def _end(run: RemediationRun) -> datetime:
    return run.finished_at or run.started_at


def describe(
    session: Session, skills: list[Skill], settings: SkillsSettings
) -> dict[str, tuple[Outcome, Standing]]:
    """Each skill's outcomes and standing, for the CLI, the console, MCP and the report."""
    found = outcomes(session, [s.name for s in skills], since=starts(skills))
    steps = open_steps(session)
    return {s.name: (found[s.name], standing(s, found[s.name], steps, settings)) for s in skills}
