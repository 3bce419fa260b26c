"""What each skill's runs came to, derived from what the store already records.

Every figure is read from the remediation runs (their verdicts, written in the transaction
that ends the run) and the incidents' timelines, so nothing can drift from them, a crash
between a verdict and a counter cannot happen, and a data volume written before these figures
existed shows its skills' history at once:

- runs: every run of the skill; verified: runs after which the check passed; failed: runs
  whose verification failed;
- changed nothing: failed runs on an incident that another run then healed (attribution:
  when two remedies ran for one fault, the credit goes to the one after which the check
  passed);
- reversals: verified runs whose incident came back within ``flap_window`` (triage reopened
  it: the same fault, so the "cure" did not hold);
- consecutive failures: failed verifications in a row, newest first, on any target;
- last used, and the median time to recovery (the run's start to its verified check).

Tests: tests/skills/test_outcomes.py.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlmodel import Session, col, select

from guard.store.models import (
    IncidentState,
    IncidentTimeline,
    RemediationRun,
    RunOrigin,
    RunStatus,
)


@dataclass
class Outcome:
    """One skill's record."""

    skill: str
    runs: int = 0
    verified: int = 0
    failed: int = 0
    changed_nothing: int = 0
    reversals: int = 0
    consecutive_failures: int = 0
    last_used: datetime | None = None
    median_recovery_seconds: float | None = None
    verified_at: list[datetime] = field(default_factory=list)  # each verified run's end
    reversed_at: list[datetime] = field(default_factory=list)  # each reversal's reopening
    failures: list[RemediationRun] = field(default_factory=list)  # the trailing failed runs

    def as_dict(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "verified": self.verified,
            "failed": self.failed,
            "changed_nothing": self.changed_nothing,
            "reversals": self.reversals,
            "consecutive_failures": self.consecutive_failures,
            "last_used": self.last_used.isoformat() if self.last_used else None,
            "median_recovery_seconds": self.median_recovery_seconds,
        }

    def summary(self) -> str:
        """One line for people: ``5 runs: 4 verified, 1 failed (1 changed nothing), ...``."""
        text = f"{self.runs} run(s): {self.verified} verified, {self.failed} failed"
        if self.changed_nothing:
            text += f" ({self.changed_nothing} changed nothing)"
        text += f", {self.reversals} reversal(s)"
        if self.consecutive_failures:
            text += f", {self.consecutive_failures} failure(s) in a row"
        if self.median_recovery_seconds is not None:
            text += f", median recovery {self.median_recovery_seconds:.1f}s"
        if self.last_used is not None:
            text += f", last used {self.last_used:%Y-%m-%d %H:%M} UTC"
        return text


def outcomes(
    session: Session,
    names: Iterable[str] | None = None,
    since: Mapping[str, datetime] | None = None,
    until: Mapping[str, datetime] | None = None,
) -> dict[str, Outcome]:
    """Each named skill's ``Outcome`` (every skill that ran, when ``names`` is None); with
    ``since``/``until``, only the runs a skill started in that span (its current revision's,
    ``guard.skills.revisions``, or one revision's for ``guard skills history``)."""
    query = select(RemediationRun).where(RemediationRun.origin == RunOrigin.skill)
    wanted = list(names) if names is not None else None
    if wanted is not None:
        query = query.where(col(RemediationRun.skill).in_(wanted))
    runs = [
        r
        for r in session.exec(query.order_by(col(RemediationRun.id))).all()
        if (since is None or r.skill not in since or r.started_at >= since[r.skill])
        and (until is None or r.skill not in until or r.started_at < until[r.skill])
    ]
    healed = _healed_after(session, {r.incident_id for r in runs})
    reopened = _reopenings(session, {r.incident_id for r in runs if r.status == RunStatus.verified})
    found = {name: Outcome(name) for name in wanted or []}
    durations: dict[str, list[float]] = {}
    for run in runs:
        out = found.setdefault(run.skill, Outcome(run.skill))
        out.runs += 1
        if out.last_used is None or run.started_at > out.last_used:
            out.last_used = run.started_at
        if run.status == RunStatus.verified:
            out.verified += 1
            out.consecutive_failures, out.failures = 0, []
            if run.finished_at is not None:
                out.verified_at.append(run.finished_at)
                durations.setdefault(run.skill, []).append(
                    (run.finished_at - run.started_at).total_seconds()
                )
                back = _reversal(run, reopened.get(run.incident_id, []))
                if back is not None:
                    out.reversals += 1
                    out.reversed_at.append(back)
        elif run.status == RunStatus.failed:
            out.failed += 1
            out.consecutive_failures += 1
            out.failures.append(run)
            assert run.id is not None
            if any(other > run.id for other in healed.get(run.incident_id, [])):
                out.changed_nothing += 1
    for name, seconds in durations.items():
        found[name].median_recovery_seconds = round(statistics.median(seconds), 3)
    return found


def _healed_after(session: Session, incidents: set[int]) -> dict[int, list[int]]:
    """Per incident, the ids of its verified runs (of any skill, or a human's fix)."""
    if not incidents:
        return {}
    rows = session.exec(
        select(RemediationRun.incident_id, RemediationRun.id).where(
            col(RemediationRun.incident_id).in_(incidents),
            RemediationRun.status == RunStatus.verified,
        )
    ).all()
    out: dict[int, list[int]] = {}
    for incident_id, run_id in rows:
        if run_id is not None:
            out.setdefault(incident_id, []).append(run_id)
    return out


def _reopenings(session: Session, incidents: set[int]) -> dict[int, list[datetime]]:
    """Per incident, when triage reopened it (resolved -> open: the fault came back)."""
    if not incidents:
        return {}
    rows = session.exec(
        select(IncidentTimeline.incident_id, IncidentTimeline.at).where(
            col(IncidentTimeline.incident_id).in_(incidents),
            IncidentTimeline.type == "state_changed",
            IncidentTimeline.from_state == IncidentState.resolved,
            IncidentTimeline.to_state == IncidentState.open,
        )
    ).all()
    out: dict[int, list[datetime]] = {}
    for incident_id, at in rows:
        out.setdefault(incident_id, []).append(at)
    return out


def _reversal(run: RemediationRun, reopened: list[datetime]) -> datetime | None:
    """The first reopening after ``run`` verified, if any."""
    assert run.finished_at is not None
    later = sorted(at for at in reopened if at >= run.finished_at)
    return later[0] if later else None
