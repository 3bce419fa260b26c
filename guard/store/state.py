"""Small persisted key/value state (log offsets, check counters), read and written in a session."""

from __future__ import annotations

from typing import Any

from sqlmodel import Session

from guard.records import utcnow
from guard.store.models import MonitorState


def get_state(session: Session, key: str) -> dict[str, Any]:
    row = session.get(MonitorState, key)
    return dict(row.value) if row is not None else {}


def put_state(session: Session, key: str, value: dict[str, Any]) -> None:
    row = session.get(MonitorState, key)
    if row is None:
        session.add(MonitorState(key=key, value=value))
    else:
        row.value = dict(value)  # a new object, so SQLAlchemy sees the JSON change
        row.updated_at = utcnow()
        session.add(row)
