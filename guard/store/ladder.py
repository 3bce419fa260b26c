"""The autonomy ladder's steps: a skill demoted by its verdicts, a promotion proposed.

A row is written in the transaction that stores the verdict which caused it (with its audit
entry), so a crash leaves either the verdict and its step or neither. A demotion is live
until ``closed_at`` (a merged promotion, or a human's ``trust: trusted`` on the reviewed
branch, lifts it); a proposal is open until it is merged or dropped.
The rules are in ``guard.skills.ladder``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, Text
from sqlmodel import Field, Session, SQLModel, col, select

from guard.store.models import UTCDateTime, now_column

DEMOTED = "demoted"
PROPOSED = "proposed"
DECLINED = "declined"  # a proposal an admin answered "keep asking"
PROMOTE = "promote"  # the approval kinds of a promotion question's two buttons
KEEP = "keep_asking"
ANSWERS = (PROMOTE, KEEP)


class LadderStep(SQLModel, table=True):
    """One step of one skill on the ladder: ``demoted`` (to approval) or ``proposed``
    (trust: trusted, for review)."""

    __tablename__ = "skill_ladder"

    id: int | None = Field(default=None, primary_key=True)
    skill: str = Field(index=True)
    step: str  # DEMOTED or PROPOSED
    reason: str = Field(default="", sa_column=Column(Text, nullable=False))
    runs: list[int] = Field(default_factory=list, sa_column=Column(JSON))  # the evidence
    at: datetime = now_column(nullable=False)
    closed_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    outcome: str = ""  # why it closed: merged, lifted, dropped, promoted, declined
    details: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))  # branch, url


def open_step(session: Session, skill: str, step: str) -> LadderStep | None:
    """The skill's live demotion or open proposal, if any."""
    return session.exec(
        select(LadderStep)
        .where(
            LadderStep.skill == skill,
            LadderStep.step == step,
            col(LadderStep.closed_at).is_(None),
        )
        .order_by(col(LadderStep.id).desc())
    ).first()


def open_steps(session: Session) -> list[LadderStep]:
    """Every live demotion and open proposal."""
    return list(
        session.exec(
            select(LadderStep)
            .where(col(LadderStep.closed_at).is_(None))
            .order_by(col(LadderStep.id))
        ).all()
    )


def last_closed(session: Session, skill: str, step: str, outcome: str) -> LadderStep | None:
    """The skill's newest ``step`` closed with ``outcome`` (a declined proposal), if any."""
    return session.exec(
        select(LadderStep)
        .where(LadderStep.skill == skill, LadderStep.step == step, LadderStep.outcome == outcome)
        .order_by(col(LadderStep.id).desc())
    ).first()
