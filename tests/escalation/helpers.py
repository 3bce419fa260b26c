"""Shared by the escalation tests: a frozen clock, an incident whose question was asked, and a
stand-in for the page outbox (until ``guard.notify.pagers`` is merged) that writes its rows in
the caller's transaction, as the real one does."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import Session, col, select

from guard.notify.outbox import queue
from guard.records import utcnow
from guard.store.db import Database
from guard.store.models import Incident, IncidentTimeline, MonitorState
from tests.agent_helpers import stored_incident

PAGE = "page:"
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


class FakePages:
    """``enqueue_pages``/``triggered_targets`` over ``monitor_state`` rows: one per (target,
    key), a repeat is a no-op, all in the caller's transaction."""

    def enqueue_pages(
        self,
        session: Session,
        targets: Sequence[str],
        incident: Incident,
        action: Any,
        *,
        key: str,
        reason: str = "",
    ) -> list[int]:
        made: list[int] = []
        for target in targets:
            row_key = f"{PAGE}{incident.id}:{target}:{key}"
            if session.get(MonitorState, row_key) is None:
                session.add(MonitorState(key=row_key, value={"action": action, "reason": reason}))
                made.append(len(made) + 1)
        return made

    def triggered_targets(self, session: Session, incident_id: int) -> list[str]:
        rows = session.exec(
            select(MonitorState).where(col(MonitorState.key).startswith(f"{PAGE}{incident_id}:"))
        ).all()
        return sorted(
            {
                r.key.split(":")[2] + ":" + r.key.split(":")[3]
                for r in rows
                if r.value["action"] == "trigger"
            }
        )


def pages(db: Database) -> list[tuple[str, str, str]]:
    """Every page queued: (target, key, action), in order."""
    with db.session() as s:
        rows = s.exec(select(MonitorState).where(col(MonitorState.key).startswith(PAGE))).all()
    out = []
    for r in rows:
        _, _, kind, name, key = r.key.split(":", 4)
        out.append((f"{kind}:{name}", key, str(r.value["action"])))
    return out


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
