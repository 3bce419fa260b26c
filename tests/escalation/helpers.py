"""Shared by the escalation tests: a frozen clock, notifiers to page, an incident whose question
was asked, and the pages queued in the page outbox."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import col, select

from guard.domain.records import utcnow
from guard.notify.outbox import queue
from guard.store.db import Database
from guard.store.models import IncidentTimeline
from guard.store.paging import PageOutbox
from tests.helpers.agent import stored_incident

NOTIFIERS = {
    "pagerduty": {"primary": {"routing_key": "k" * 32}},
    "webhook": {"ops": {"url": "https://ops.example/hook", "hmac_secret": "s" * 20}},
}


class Clock:
    """A clock that moves only when told."""

    def __init__(self, at: datetime | None = None) -> None:
        self.now = at or utcnow()

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


def pages(db: Database) -> list[tuple[str, str, str]]:
    """Every page queued in the page outbox: (target, key, action), in order."""
    with db.session() as s:
        rows = s.exec(select(PageOutbox).order_by(col(PageOutbox.id))).all()
    return [(r.target, r.key, r.action) for r in rows]


def asked_incident(
    db: Database,
    at: datetime,
    chats: Sequence[str] = ("1001",),
    state: str = "awaiting_human",
    **fields: Any,
) -> int:
    """An incident waiting for a human, asked at ``at`` in ``chats`` (Telegram)."""
    with db.session() as s:
        inc = stored_incident(s, state, **fields)
        s.add(IncidentTimeline(incident_id=inc.id, at=at, type="asked_human", message="?"))
        incident_id = int(inc.id)
    for chat in chats:
        queue.enqueue(
            db,
            "telegram",
            method="send",
            chat_id=chat,
            text="?",
            role="incident",
            incident_id=incident_id,
        )
    return incident_id
