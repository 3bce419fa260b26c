"""Correlation's tables: the signals joined to an incident, and the joins undone by a human.

A ``RelatedSignal`` is one signal (a monitor's fingerprint) that joined another incident, its
*root*, instead of opening its own: its own count and timeline (first and last seen, the
latest message). A ``CorrelationSplit`` remembers that a human split a signal off a root
(``guard incidents split``), so the same pair is never joined again.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, Index, Text
from sqlmodel import Field, SQLModel

from guard.store.models import UTCDateTime, now_column


class RelatedSignal(SQLModel, table=True):
    """A signal attached to its root incident (``incident_id``), with its own timeline."""

    __tablename__ = "related_signal"
    __table_args__ = (Index("ix_related_signal_fp", "fingerprint"),)

    id: int | None = Field(default=None, primary_key=True)
    incident_id: int = Field(foreign_key="incident.id", index=True)  # the root
    fingerprint: str
    check_key: str = Field(index=True)
    monitor_id: str
    service: str | None = None
    source: str
    target: str
    kind: str
    severity: str
    message: str = Field(default="", sa_column=Column(Text, nullable=False))
    count: int = 0
    status: str = "firing"  # firing, ok (its check passed since), event (a log line: no ok)
    first_seen: datetime = now_column(nullable=False)
    last_seen: datetime = now_column(nullable=False)
    joined_at: datetime = now_column(nullable=False)
    details: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))


class CorrelationSplit(SQLModel, table=True):
    """A join a human undid: ``root_fingerprint`` and ``fingerprint`` are not joined again."""

    __tablename__ = "correlation_split"
    __table_args__ = (
        Index("ix_correlation_split_pair", "root_fingerprint", "fingerprint", unique=True),
    )

    id: int | None = Field(default=None, primary_key=True)
    root_monitor: str
    root_fingerprint: str
    monitor_id: str
    fingerprint: str
    incident_id: int | None = None  # the incident the split signal became
    by: str
    at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
