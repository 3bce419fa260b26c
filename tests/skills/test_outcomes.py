"""A skill's outcomes as the store's runs and timelines give them (in process, SQLite)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from guard.domain.records import utcnow
from guard.incidents.lifecycle import transition
from guard.skills.outcomes import outcomes
from guard.store.db import Database, open_database
from guard.store.models import (
    HUMAN_FIX,
    Incident,
    IncidentState,
    RemediationRun,
    RunOrigin,
    RunStatus,
)
from tests.helpers.agent import stored_incident

pytestmark = pytest.mark.unit
S = IncidentState


def incident(db: Database, target: str = "api") -> int:
    with db.session() as s:
        inc = stored_incident(
            s,
            monitor_id="m",
            source="docker",
            target=target,
            kind="container_exited",
            severity="error",
            title="t",
            message="m",
        )
        return int(inc.id)


def run(
    db: Database,
    incident_id: int,
    skill: str,
    status: RunStatus,
    *,
    took: float = 2.0,
    origin: RunOrigin = RunOrigin.skill,
) -> None:
    now = utcnow()
    with db.session() as s:
        s.add(
            RemediationRun(
                incident_id=incident_id,
                skill=skill,
                target="api",
                origin=origin,
                status=status,
                started_at=now - timedelta(seconds=took),
                finished_at=now,
            )
        )


def move(db: Database, incident_id: int, *states: IncidentState) -> None:
    with db.session() as s:
        inc = s.get(Incident, incident_id)
        assert inc is not None
        for to in states:
            transition(s, inc, to, actor="test", reason=f"to {to}")


def test_runs_verdicts_recovery_time_and_last_use_are_counted_per_skill():
    db = open_database("sqlite://")
    for took in (1.0, 3.0, 10.0):
        i = incident(db)
        run(db, i, "restart", RunStatus.verified, took=took)
        move(db, i, S.remediating, S.resolved)
    run(db, incident(db), "restart", RunStatus.failed)
    with db.session() as s:
        got = outcomes(s, ["restart", "never-ran"])
    r = got["restart"]
    assert (r.runs, r.verified, r.failed, r.reversals) == (4, 3, 1, 0)
    assert r.consecutive_failures == 1 and r.median_recovery_seconds == pytest.approx(3.0, 0.01)
    assert r.last_used is not None and r.last_used > utcnow() - timedelta(minutes=1)
    assert got["never-ran"].as_dict() == {
        "runs": 0,
        "verified": 0,
        "failed": 0,
        "changed_nothing": 0,
        "reversals": 0,
        "consecutive_failures": 0,
        "last_used": None,
        "median_recovery_seconds": None,
    }


def test_a_verified_run_whose_fault_came_back_counts_as_a_reversal():
    db = open_database("sqlite://")
    i = incident(db)
    run(db, i, "restart", RunStatus.verified)
    move(db, i, S.remediating, S.resolved, S.open)  # triage reopened it: the same fault
    j = incident(db)
    run(db, j, "restart", RunStatus.verified)
    move(db, j, S.remediating, S.resolved)
    with db.session() as s:
        r = outcomes(s)["restart"]
    assert (r.verified, r.reversals, len(r.reversed_at)) == (2, 1, 1)


def test_two_remedies_for_one_fault_credit_the_one_after_which_the_check_passed():
    db = open_database("sqlite://")
    i = incident(db)
    run(db, i, "clean-tmp", RunStatus.failed)  # the check still failed after it
    run(db, i, "restart", RunStatus.verified)  # ...and passed after this one
    j = incident(db)
    run(db, j, "clean-tmp", RunStatus.failed)
    run(db, j, HUMAN_FIX, RunStatus.verified, origin=RunOrigin.human)
    k = incident(db)
    run(db, k, "clean-tmp", RunStatus.failed)  # nothing healed this one (yet)
    with db.session() as s:
        got = outcomes(s)
    assert HUMAN_FIX not in got  # a human's fix is not a skill
    clean, restart = got["clean-tmp"], got["restart"]
    assert (clean.verified, clean.failed, clean.changed_nothing) == (0, 3, 2)
    assert clean.consecutive_failures == 3
    assert (restart.verified, restart.changed_nothing) == (1, 0)
    assert "3 failed (2 changed nothing)" in clean.summary()
