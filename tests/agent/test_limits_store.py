"""The runaway guards' facts as the store keeps them (in process, SQLite)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from guard.agent import limits, policy
from guard.domain.records import utcnow
from guard.skills.library import Candidate, Skill
from guard.skills.model import SkillFrontmatter, SkillSpec
from guard.store.db import Database, open_database
from guard.store.models import RemediationRun, RunStatus
from tests.helpers.agent import stored_incident

pytestmark = pytest.mark.unit


def db_with_incident() -> Database:
    db = open_database("sqlite://")
    with db.session() as s:
        stored_incident(
            s,
            monitor_id="m",
            source="docker",
            target="api-1",
            kind="container_exit",
            severity="error",
            title="t",
            message="m",
        )
    return db


def run(
    db: Database,
    status: RunStatus,
    *,
    skill: str = "restart",
    target: str = "api-1",
    ago: float = 0,
) -> None:
    with db.session() as s:
        s.add(
            RemediationRun(
                incident_id=1,
                skill=skill,
                target=target,
                status=status,
                started_at=utcnow() - timedelta(seconds=ago),
            )
        )


def candidate(name: str = "restart", window: float = 600) -> Candidate:
    spec = SkillSpec.model_validate(
        {
            "triggers": [{"kind": "container_exit"}],
            "steps": [{"run": "true"}],
            "limits": {"max_runs": 2, "window": window},
        }
    )
    return Candidate(Skill(Path("/x"), SkillFrontmatter(name=name, description="d"), "", spec), 1.0)


def test_history_counts_runs_in_the_skills_window_on_that_target_only() -> None:
    db = db_with_incident()
    run(db, RunStatus.failed, ago=30)
    run(db, RunStatus.verified, ago=60)
    run(db, RunStatus.verified, ago=3600)  # outside the 600 s window
    run(db, RunStatus.verified, target="api-2")
    with db.session() as s:
        h = limits.history(s, [candidate()], "api-1")
    assert h == {"restart": policy.SkillHistory(runs_in_window=2, blocked=None)}


def test_consecutive_failures_stop_at_the_last_success() -> None:
    db = db_with_incident()
    for status in (
        RunStatus.failed,
        RunStatus.verified,
        RunStatus.failed,
        RunStatus.failed,
        RunStatus.running,
    ):
        run(db, status)
    with db.session() as s:
        assert limits.consecutive_failures(s, "restart", "api-1") == 2  # running ones are skipped
        assert limits.consecutive_failures(s, "other", "api-1") == 0


def test_a_tripped_breaker_shows_in_the_history_until_cleared() -> None:
    db = db_with_incident()
    with db.session() as s:
        limits.trip(s, "restart", "api-1", "2 failed runs in a row (last: exit 1)")
    with db.session() as s:
        h = limits.history(s, [candidate()], "api-1")["restart"]
        other = limits.history(s, [candidate()], "api-2")["restart"]
    assert h.blocked == "2 failed runs in a row (last: exit 1)"
    assert other.blocked is None  # per target
    with db.session() as s:
        block = limits.blocked(s, "restart", "api-1")
        assert block is not None
        block.cleared_at = utcnow()
        s.add(block)
    with db.session() as s:
        assert limits.history(s, [candidate()], "api-1")["restart"].blocked is None


def test_the_facts_feed_the_policy_end_to_end() -> None:
    db = db_with_incident()
    run(db, RunStatus.verified, ago=10)
    run(db, RunStatus.verified, ago=20)
    c = candidate()
    with db.session() as s:
        decision = policy.decide(
            type("I", (), {"target": "api-1"})(), [c], limits.history(s, [c], "api-1")
        )
    assert isinstance(decision, policy.AskHuman) and decision.guarded_by == "rate_limited"
