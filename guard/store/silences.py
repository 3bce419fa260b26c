"""Silences: Alertmanager-style matchers with an expiry. An incident they match is recorded as
usual (opened, counted, on its timeline) but nobody is asked or paged about it until the silence
expires (``guard.incidents.silences`` matches them; the agent applies them as it takes an
incident).

A silence ends at ``expires_at``, or earlier when someone expires it (``cleared_at``); ``live``
ignores ended ones, so nothing needs to sweep them. The rows stay: ``guard silences --all``
shows what was silenced, by whom, until when.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column
from sqlmodel import Field, Session, SQLModel, col, select

from guard.domain.records import utcnow
from guard.store.models import UTCDateTime, now_column


class Silence(SQLModel, table=True):
    """Matchers (``[{"name", "op", "value"}]``, all must match) and when they stop applying."""

    id: int | None = Field(default=None, primary_key=True)
    matchers: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON))
    expires_at: datetime = Field(sa_column=Column(UTCDateTime(), nullable=False, index=True))
    by: str
    comment: str = ""
    created_at: datetime = now_column(nullable=False)
    cleared_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))


def live(session: Session, at: datetime | None = None) -> list[Silence]:
    """The silences in force at ``at`` (default now), soonest to expire first."""
    now = at or utcnow()
    return list(
        session.exec(
            select(Silence)
            .where(col(Silence.cleared_at).is_(None), col(Silence.expires_at) > now)
            .order_by(col(Silence.expires_at), col(Silence.id))
        ).all()
    )


def recent(session: Session, limit: int = 50) -> list[Silence]:
    """The newest silences, live or ended."""
    return list(session.exec(select(Silence).order_by(col(Silence.id).desc()).limit(limit)).all())
