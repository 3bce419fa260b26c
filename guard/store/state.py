"""Small persisted key/value state (log offsets, check counters), read and written in a session."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import update
from sqlmodel import Session, col, select

from guard.domain.records import utcnow
from guard.store.models import MonitorState


def get_state(session: Session, key: str) -> dict[str, Any]:
    row = session.get(MonitorState, key)
    return dict(row.value) if row is not None else {}


def get_states(session: Session, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Many keys in few queries (a missing key maps to ``{}``): a thousand monitors' states at
    start cost a handful of SELECTs, not a thousand transactions."""
    wanted = list(dict.fromkeys(keys))
    found: dict[str, dict[str, Any]] = {key: {} for key in wanted}
    for i in range(0, len(wanted), 500):  # well under SQLite's bound-parameter limit
        chunk = wanted[i : i + 500]
        rows = session.exec(select(MonitorState).where(col(MonitorState.key).in_(chunk)))
        for row in rows:
            found[row.key] = dict(row.value)
    return found


def put_states(session: Session, states: Mapping[str, dict[str, Any]]) -> None:
    """Write many keys at once: one SELECT of which exist, one executemany UPDATE for those and
    an INSERT for the rest (a batch of a hundred log-file cursors is three statements, not two
    hundred)."""
    keys = list(states)
    existing: set[str] = set()
    for i in range(0, len(keys), 500):
        chunk = keys[i : i + 500]
        existing.update(
            session.exec(select(MonitorState.key).where(col(MonitorState.key).in_(chunk)))
        )
    now = utcnow()
    updates = [
        {"key": k, "value": dict(v), "updated_at": now} for k, v in states.items() if k in existing
    ]
    if updates:
        session.execute(update(MonitorState), updates)  # the ORM's bulk UPDATE by primary key
    for k, v in states.items():
        if k not in existing:
            session.add(MonitorState(key=k, value=dict(v)))


def put_state(session: Session, key: str, value: dict[str, Any]) -> None:
    row = session.get(MonitorState, key)
    if row is None:
        session.add(MonitorState(key=key, value=value))
    else:
        row.value = dict(value)  # a new object, so SQLAlchemy sees the JSON change
        row.updated_at = utcnow()
        session.add(row)
