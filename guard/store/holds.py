"""Holds: a remedy's claim on its target, so the signals its own action causes are expected.

A ``Hold`` is written when a remediation run starts, before any of its steps acts: the target
(and the services that depend on it), the incident, the action it runs and the effects that
action explains. It is live until ``ends_at`` (verification end plus ``agent.settle``; None
while the run still works) unless ``closed_at`` says it was ended. Triage reads it
(``guard.triage.holds``); the agent places, extends and ends it (``guard.agent.holding``).
It is a row, not memory, so a restarted Guard (or the next leader on Postgres) honours it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import JSON, Column, Index
from sqlmodel import Field, Session, SQLModel, col, or_, select

from guard.domain.records import utcnow
from guard.store.models import RemediationRun, UTCDateTime, now_column


class Hold(SQLModel, table=True):
    """One remedy's claim on ``target`` (and on ``services``, the ones depending on it)."""

    __tablename__ = "remedy_hold"
    __table_args__ = (Index("ix_remedy_hold_live", "closed_at", "target"),)

    id: int | None = Field(default=None, primary_key=True)
    incident_id: int = Field(foreign_key="incident.id", index=True)
    run_id: int | None = Field(default=None, index=True)
    target: str
    service: str | None = None  # the incident's service
    services: list[str] = Field(default_factory=list, sa_column=Column(JSON))  # + dependants
    action: str = ""  # e.g. docker.restart (the run's acting steps, comma-separated)
    explains: list[str] = Field(default_factory=list, sa_column=Column(JSON))  # effect classes
    started_at: datetime = now_column(nullable=False)
    acted_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    ends_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    closed_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    settle: float = 0.0  # seconds it outlasts its action and its verification
    effects: int = 0  # signals it explained
    details: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))


def live(session: Session, now: datetime | None = None) -> list[Hold]:
    """Holds not ended: their run still works, or its settle period has not passed."""
    now = now or utcnow()
    return list(
        session.exec(
            select(Hold)
            .where(
                col(Hold.closed_at).is_(None),
                or_(col(Hold.ends_at).is_(None), col(Hold.ends_at) > now),
            )
            .order_by(col(Hold.id))
        ).all()
    )


def holding(session: Session, target: str, *, besides: int | None = None) -> Hold | None:
    """The live hold on ``target`` of an incident other than ``besides``, if any."""
    return next((h for h in live(session) if h.target == target and h.incident_id != besides), None)


def of_run(session: Session, run_id: int) -> Hold | None:
    return session.exec(select(Hold).where(Hold.run_id == run_id)).first()


def acted(session: Session, run_id: int, *, acting: bool) -> None:
    """A step of the run starts acting on the target (``acting``) or has just acted: log lines
    and exits are explained while it acts and for the settle period after."""
    hold = of_run(session, run_id)
    if hold is not None:
        if acting and "acting_since" not in hold.details:  # before it, nothing is the remedy's
            hold.details = {**hold.details, "acting_since": utcnow().isoformat()}
        hold.acted_at = None if acting else utcnow()
        session.add(hold)


def settle(session: Session, run_id: int, settle_for: float) -> Hold | None:
    """The run's verification ended: the hold lasts ``settle_for`` seconds more."""
    hold = of_run(session, run_id)
    if hold is not None and hold.closed_at is None:
        hold.ends_at = utcnow() + timedelta(seconds=settle_for)
        session.add(hold)
    return hold


def close_expired(session: Session, running: set[int], settle_for: float) -> list[Hold]:
    """After a restart: close the holds whose time is up; a hold whose run ended before its
    ``ends_at`` was written gets one (the run's end plus the settle period), so a hold is
    never left open forever. Returns the holds closed."""
    now = utcnow()
    closed: list[Hold] = []
    for hold in session.exec(select(Hold).where(col(Hold.closed_at).is_(None))).all():
        if hold.ends_at is None and (hold.run_id is None or hold.run_id not in running):
            ended = _run_end(session, hold.run_id) or hold.started_at
            hold.ends_at = ended + timedelta(seconds=settle_for)
        if hold.ends_at is not None and hold.ends_at <= now:
            hold.closed_at = now
            closed.append(hold)
        session.add(hold)
    return closed


def _run_end(session: Session, run_id: int | None) -> datetime | None:
    if run_id is None:
        return None
    run = session.get(RemediationRun, run_id)
    return run.finished_at if run is not None else None
