"""The page outbox: one row per page to a pager or webhook (``page_outbox``).

A row is one event (``trigger``, ``acknowledge`` or ``resolve``) for one incident to one
notifier (``target``: ``pagerduty:NAME`` or ``webhook:NAME``). ``(target, key)`` is unique:
``key`` is the caller's idempotency key (``route:12:0``, ``escalation:12:1``), so queueing the
same page twice queues it once. ``delivery`` is a random id fixed when the row is queued: it is
the webhook's ``X-Guard-Delivery`` header on every attempt, so a receiver can drop a repeat.
``payload`` is a snapshot of the incident when the page was queued (already redacted, like
every stored row). Credentials are never stored here: the worker reads them from the settings
when it sends.

No foreign key to ``incident``: ``store.retention`` prunes these rows with their incident.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, Column, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from guard.store.models import UTCDateTime, now_column


class PageStatus(StrEnum):
    pending = "pending"  # waiting for (another) attempt, at ``next_at``
    sent = "sent"  # the notifier accepted it
    failed = "failed"  # refused for good (a 400): never retried


class PageOutbox(SQLModel, table=True):
    """A page to send, sent, or refused."""

    __tablename__ = "page_outbox"
    __table_args__ = (UniqueConstraint("target", "key", name="uq_page_outbox_target_key"),)

    id: int | None = Field(default=None, primary_key=True)
    target: str = Field(index=True)
    key: str
    incident_id: int = Field(index=True)
    action: str  # trigger, acknowledge, resolve
    reason: str = ""
    delivery: str = Field(default_factory=lambda: uuid.uuid4().hex)
    payload: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    status: str = Field(default=PageStatus.pending.value, index=True)
    attempts: int = 0
    next_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
    error: str = Field(default="", sa_column=Column(Text, nullable=False))
    created_at: datetime = now_column(nullable=False)
    sent_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime()))
