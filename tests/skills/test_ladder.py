"""The ladder's rules on a real store (in process, SQLite): each verdict's step, written with
the verdict and audited; a reversal blocks a promotion; unused skills are stale."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from sqlmodel import select

from guard.config.skills import SkillsSettings
from guard.domain.records import utcnow
from guard.skills import ladder
from guard.skills.library import Skill
from guard.skills.model import SkillFrontmatter, SkillSpec
from guard.skills.outcomes import outcomes
from guard.store.db import Database, open_database
from guard.store.ladder import DEMOTED, PROPOSED, LadderStep, open_steps
from guard.store.models import AuditEntry, IncidentState, RemediationRun, RunStatus
from tests.skills.test_outcomes import incident, move

pytestmark = pytest.mark.unit
S = IncidentState
SETTINGS = SkillsSettings()


def skill(trust: str = "approval", learned_at: str | None = None) -> Skill:
    spec = SkillSpec.model_validate(
        {
            "triggers": [{"kind": "container_exited"}],
            "steps": [{"run": "true"}],
            "trust": trust,
            "learned_from": {"at": learned_at} if learned_at else {},
        }
    )
    return Skill(Path("/x"), SkillFrontmatter(name="restart", description="d"), "", spec)


def verdict(db: Database, s: Skill, status: RunStatus, incident_id: int) -> LadderStep | None:
    """A run's verdict, stored with its ladder step as ``Remediator._finish`` does."""
    with db.session() as session:
        run = RemediationRun(
            incident_id=incident_id,
            skill=s.name,
            target="api",
            status=status,
            finished_at=utcnow(),
            message="still failing: container api exited with code 3",
        )
        session.add(run)
        return ladder.after_verdict(session, run, s, SETTINGS)


def audited(db: Database) -> list[str]:
    with db.session() as session:
        return [e.action for e in session.exec(select(AuditEntry)).all()]


def test_promotion_is_proposed_after_three_verified_recoveries_once_and_audited():
    db = open_database("sqlite://")
    s = skill("approval")
    steps = [verdict(db, s, RunStatus.verified, incident(db)) for _ in range(4)]
    assert steps[:2] == [None, None] and steps[3] is None  # proposed once, at the third
    assert steps[2] is not None and steps[2].step == PROPOSED
    assert "3 verified recoveries" in steps[2].reason and "no reversal" in steps[2].reason
    assert audited(db) == ["skill.promotion_proposed"]
    with db.session() as session:
        found = ladder.describe(session, [s], SETTINGS)["restart"][1]
    assert found.trust == "approval" and found.proposed == steps[2].reason


def test_a_reversal_within_the_window_blocks_the_promotion():
    db = open_database("sqlite://")
    s = skill("approval")
    first = incident(db)
    verdict(db, s, RunStatus.verified, first)
    move(db, first, S.remediating, S.resolved, S.open)  # the fault came back: reversed
    for _ in range(3):
        assert verdict(db, s, RunStatus.verified, incident(db)) is None
    with db.session() as session:
        assert outcomes(session)["restart"].reversals == 1
        assert open_steps(session) == []


def test_a_trusted_skill_is_demoted_after_demote_after_failures_then_can_climb_back():
    db = open_database("sqlite://")
    s = skill("trusted")
    i = incident(db)
    assert verdict(db, s, RunStatus.failed, i) is None
    demoted = verdict(db, s, RunStatus.failed, i)
    assert demoted is not None and demoted.step == DEMOTED and demoted.runs == [1, 2]
    assert "after 2 failed verifications in a row: run #1 on incident #1 (api)" in demoted.reason
    assert verdict(db, s, RunStatus.failed, i) is None  # demoted once
    with db.session() as session:
        assert ladder.describe(session, [s], SETTINGS)["restart"][1].trust == "approval"
    # a human approves it three times and it heals: proposed to climb back
    steps = [verdict(db, s, RunStatus.verified, incident(db)) for _ in range(3)]
    assert steps[2] is not None and steps[2].step == PROPOSED
    assert audited(db) == ["skill.demoted", "skill.promotion_proposed"]


def test_an_approval_skill_is_never_demoted_and_a_trusted_one_is_never_proposed():
    db = open_database("sqlite://")
    i = incident(db)
    for _ in range(3):
        assert verdict(db, skill("approval"), RunStatus.failed, i) is None
    for _ in range(3):
        assert verdict(db, skill("trusted"), RunStatus.verified, incident(db)) is None
    assert audited(db) == []


def test_a_skill_unused_for_stale_after_is_stale_and_one_never_run_is_not():
    old = (utcnow() - timedelta(days=120)).isoformat()
    recent = (utcnow() - timedelta(days=10)).isoformat()
    assert ladder.is_stale(skill(learned_at=old), None, SETTINGS)
    assert not ladder.is_stale(skill(learned_at=recent), None, SETTINGS)
    assert not ladder.is_stale(skill(), None, SETTINGS)  # a starter skill never used: no date
    assert not ladder.is_stale(skill(learned_at=old), None, SkillsSettings(stale_after=0))
