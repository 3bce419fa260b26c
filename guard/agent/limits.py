"""Runaway guards, kept in the database so a restart forgets nothing.

- Rate limit: a skill runs at most ``limits.max_runs`` times per target within ``limits.window``.
- Circuit breaker: ``agent.breaker_failures`` failed runs in a row disable the skill for that
  target (a ``SkillBlock``) until a human clears it; the incident escalates.
- A global semaphore (in the agent) caps concurrent remediations.
"""

from __future__ import annotations

from datetime import timedelta

from sqlmodel import Session, col, select

from guard.records import utcnow
from guard.skills.model import Limits
from guard.store.models import RemediationRun, SkillBlock


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


def rate_limited(session: Session, skill: str, target: str, limits: Limits) -> str | None:
    n = runs_in_window(session, skill, target, limits)
    if n >= limits.max_runs:
        return (
            f"skill {skill} already ran {n} times on {target} within "
            f"{limits.window:g}s (limit {limits.max_runs})"
        )
    return None


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
            col(RemediationRun.status).in_(["verified", "failed"]),
        )
        .order_by(col(RemediationRun.id).desc())
        .limit(20)
    ).all()
    n = 0
    for run in rows:
        if run.status != "failed":
            break
        n += 1
    return n


def trip(session: Session, skill: str, target: str, reason: str) -> SkillBlock:
    block = SkillBlock(skill=skill, target=target, reason=reason)
    session.add(block)
    session.flush()
    return block
