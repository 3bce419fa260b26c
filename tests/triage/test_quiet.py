"""``triage.quiet.resolve_quiet``: each log rule's incident resolves after its own monitor's
``resolve_after`` with no matching line, in one query for all the monitors (it runs every
second; one query per monitor was the most CPU a quiet Guard spent at 200 log files)."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import event
from sqlmodel import col, select

from guard.domain.records import IncidentEvent, utcnow
from guard.store.db import open_database
from guard.store.models import Incident
from guard.triage.quiet import resolve_quiet
from tests.helpers.agent import stored_incident

pytestmark = pytest.mark.unit


def test_each_monitor_s_resolve_after_in_one_query(tmp_path: Path) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'g.db'}")
    now = utcnow()
    rule = {"rule": "app_error"}
    with db.session() as s:
        for monitor_id, quiet_for, details in (
            ("fast", 61, rule),  # fast: 60 s -> resolves
            ("fast", 30, rule),  # a line 30 s ago: not yet
            ("slow", 61, rule),  # slow: 600 s -> not yet
            ("slow", 601, rule),  # -> resolves
            ("never", 9999, rule),  # resolve_after 0: never by itself
            ("fast", 9999, {}),  # a check's incident (no rule): a passing check ends it
        ):
            stored_incident(
                s,
                monitor_id=monitor_id,
                source="logfile",
                details=details,
                at=now - timedelta(seconds=quiet_for),
            )
    queries: list[str] = []
    event.listen(db.engine, "before_cursor_execute", lambda *a: queries.append(a[2]))
    events: list[IncidentEvent] = []
    with db.session() as s:
        before = len(queries)
        resolve_quiet(s, {"fast": 60, "slow": 600, "never": 0}, events, lambda *_: False, now)
        swept = [q for q in queries[before:] if re.search(r"FROM incident\b(?!_)", q)]
    assert len(swept) == 1  # the resolutions write the timeline and the audit chain besides
    with db.session() as s:
        states = [
            (i.monitor_id, i.state) for i in s.exec(select(Incident).order_by(col(Incident.id)))
        ]
    assert states == [
        ("fast", "resolved"),
        ("fast", "open"),
        ("slow", "open"),
        ("slow", "resolved"),
        ("never", "open"),
        ("fast", "open"),
    ]
    assert [e.type for e in events] == ["resolved", "resolved"]
