"""Tables of escalation, acknowledgement and quiet hours.

``incident_ack``: who acknowledged an incident, and when (one row per incident and episode: the
first ack wins). ``escalation_fired``: each escalation step and reminder that fired for an
incident, unique by ``(incident_id, episode, kind, number)``, written in the transaction that
queues its pages or its message, so a crash neither loses nor repeats one. An incident's
``episode`` is its ``reopen_count``: a reopened incident escalates, and is acknowledged, anew.
``quiet_held``: a question held by quiet hours, with the request to ask once released.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, UniqueConstraint
from sqlmodel import Field, SQLModel

from guard.store.models import UTCDateTime


def _at() -> Any:
    return Field(sa_column=Column(UTCDateTime(), nullable=False))


class IncidentAck(SQLModel, table=True):
    __tablename__ = "incident_ack"

    incident_id: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    episode: int = Field(default=0, primary_key=True, sa_column_kwargs={"autoincrement": False})
    by: str
    channel: str
    at: datetime = _at()


class EscalationFired(SQLModel, table=True):
    __tablename__ = "escalation_fired"
    __table_args__ = (UniqueConstraint("incident_id", "episode", "kind", "number"),)

    id: int | None = Field(default=None, primary_key=True)
    incident_id: int = Field(index=True)
    episode: int = 0
    kind: str  # "step" (number: the step's index) or "reminder" (number: 1, 2, ...)
    number: int
    at: datetime = _at()
    data: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))


class QuietHeld(SQLModel, table=True):
    __tablename__ = "quiet_held"

    id: int | None = Field(default=None, primary_key=True)
    incident_id: int = Field(index=True)
    request: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    held_at: datetime = _at()
    until: datetime = _at()
    outbox_floor: int = 0  # the highest outbox id when it was held: a later ask row is its own
    released_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    outcome: str = ""  # "asked at the window's end", "asked: now critical", "dropped: resolved"
