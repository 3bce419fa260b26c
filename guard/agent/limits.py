"""Runaway guards' facts, kept in the database so a restart forgets nothing (the decisions
they feed are pure: see ``guard.agent.policy``).

- Rate limit: a skill runs at most ``limits.max_runs`` times per target within ``limits.window``.
- Circuit breaker: ``agent.breaker_failures`` failed runs in a row disable the skill for that
  target (a ``SkillBlock``) until a human clears it; the incident escalates.
- A global semaphore (in the agent) caps concurrent remediations.
"""

from __future__ import annotations

from datetime import timedelta

from sqlmodel import Session, col, select

from guard.agent.policy import SkillHistory
from guard.domain.records import utcnow
from guard.skills.library import Candidate
from guard.skills.model import Limits
from guard.store.ladder import DEMOTED, open_step
from guard.store.models import RemediationRun, RunStatus, SkillBlock


def runs_in_window(session: Session, skill: str, target: str, limits: Limits) -> int:
    since = utcnow() - timedelta(seconds=limits.window)
    rows = session.exec(
        select(RemediationRun).where(
            RemediationRun.skill == skill,
            RemediationRun.target == target,
            col(RemediationRun.started_at) >= since,
        )
    ).all()
    return len(rows)


def history(session: Session, candidates: list[Candidate], target: str) -> dict[str, SkillHistory]:
    """Each candidate skill's history on ``target``, for ``policy.decide``."""
    out: dict[str, SkillHistory] = {}
    for c in candidates:
        block = blocked(session, c.skill.name, target)
        demoted = open_step(session, c.skill.name, DEMOTED)
        out[c.skill.name] = SkillHistory(
            runs_in_window=runs_in_window(session, c.skill.name, target, c.skill.spec.limits),
            blocked=block.reason if block is not None else None,
            demoted=demoted.reason if demoted is not None else None,
        )
    return out


def blocked(session: Session, skill: str, target: str) -> SkillBlock | None:
    return session.exec(
        select(SkillBlock).where(
            SkillBlock.skill == skill,
            SkillBlock.target == target,
            col(SkillBlock.cleared_at).is_(None),
        )
    ).first()


def consecutive_failures(session: Session, skill: str, target: str) -> int:
    rows = session.exec(
        select(RemediationRun)
        .where(
            RemediationRun.skill == skill,
            RemediationRun.target == target,
            col(RemediationRun.status).in_([RunStatus.verified, RunStatus.failed]),
        )
        .order_by(col(RemediationRun.id).desc())
        .limit(20)
    ).all()
    n = 0
    for run in rows:
        if run.status != RunStatus.failed:
            break
        n += 1
    return n


def trip(session: Session, skill: str, target: str, reason: str) -> SkillBlock:
    block = SkillBlock(skill=skill, target=target, reason=reason)
    session.add(block)
    session.flush()
    return block
