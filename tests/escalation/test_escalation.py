"""Escalation with a frozen clock: each step fires once when its time has come, reminders go
to every chat the question was asked in, once each, and an acknowledgement stops both (and
pages ``acknowledge`` to what was triggered); a viewer may not acknowledge."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import col, select

from guard.config import Settings
from guard.incidents.gate import Actor, NotAuthorised
from guard.notify import pagers
from guard.notify.escalation import Escalator, Fired, acknowledge
from guard.notify.running_gate import gate_from_settings
from guard.store.db import Database, open_database
from guard.store.escalation import EscalationFired, IncidentAck
from guard.store.models import AuditEntry, Incident, IncidentState, IncidentTimeline, OutboxMessage
from tests.escalation.helpers import NOTIFIERS, Clock, asked_incident, pages

pytestmark = pytest.mark.unit

T0 = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)  # noon: outside the quiet window below
OPERATOR, VIEWER = 7, 8


def settings(tmp_path: Path, **extra: Any) -> Settings:
    return Settings(
        data_dir=tmp_path,
        escalation={
            "remind_every": "15m",
            "steps": [
                {"after": "15m", "notify": ["pagerduty:primary"]},
                {"after": "45m", "notify": ["webhook:ops"]},
            ],
        },
        access={"telegram": {str(OPERATOR): "operator", str(VIEWER): "viewer"}},
        notifiers=NOTIFIERS,
        **extra,
    )


@pytest.fixture
def world(tmp_path: Path) -> tuple[Settings, Database, Clock, Escalator]:
    s = settings(tmp_path)
    db = open_database(s.database_url)
    clock = Clock(T0)
    return s, db, clock, Escalator(s, db, clock=clock)


def replies(db: Database, incident_id: int) -> list[tuple[str, str]]:
    with db.session() as s:
        rows = s.exec(
            select(OutboxMessage)
            .where(OutboxMessage.incident_id == incident_id, OutboxMessage.role == "reply")
            .order_by(col(OutboxMessage.id))
        ).all()
    assert all(r.reply_to_incident and r.method == "send" for r in rows)
    return [(r.chat_id, r.text) for r in rows]


def test_each_step_fires_once_when_its_time_has_come(world: Any) -> None:
    s, db, clock, esc = world
    inc = asked_incident(db, T0)
    clock.advance(minutes=14, seconds=59)
    assert esc.tick() == []
    clock.advance(seconds=1)  # 15 minutes: step 1 (and the first reminder)
    assert Fired(inc, "step", 0) in esc.tick()
    assert pages(db) == [("pagerduty:primary", f"escalation:{inc}:0", "trigger")]
    clock.advance(minutes=10)
    assert esc.tick() == []  # nothing new: step 1 fired already
    clock.advance(minutes=20)  # 45 minutes
    assert Fired(inc, "step", 1) in esc.tick()
    again = Escalator(s, db, clock=clock)  # a restart: the record holds
    clock.advance(hours=3)
    assert [f for f in again.tick() if f.kind == "step"] == []
    assert pages(db) == [
        ("pagerduty:primary", f"escalation:{inc}:0", "trigger"),
        ("webhook:ops", f"escalation:{inc}:1", "trigger"),
    ]
    with db.session() as session:
        steps = session.exec(
            select(IncidentTimeline.message).where(IncidentTimeline.type == "escalation_step")
        ).all()
    assert len(steps) == 2 and "paged pagerduty:primary" in steps[0]


def test_steps_missed_while_guard_was_down_fire_at_once(world: Any) -> None:
    _, db, clock, esc = world
    inc = asked_incident(db, T0)
    clock.advance(hours=1)
    fired = esc.tick()
    assert [f for f in fired if f.kind == "step"] == [Fired(inc, "step", 0), Fired(inc, "step", 1)]
    assert [f for f in fired if f.kind == "reminder"] == [Fired(inc, "reminder", 4)]  # one, not 4


def test_a_failed_page_loses_no_step(world: Any) -> None:
    """The step is recorded in the transaction that queues its pages: if queueing fails,
    neither is written, and the next tick fires it."""
    s, db, clock, _ = world
    inc = asked_incident(db, T0)

    class Broken:
        triggered_targets = staticmethod(pagers.triggered_targets)

        def enqueue_pages(self, *a: Any, **kw: Any) -> list[int]:
            raise RuntimeError("the database went away")

    clock.advance(minutes=16)
    with pytest.raises(RuntimeError):
        Escalator(s, db, clock=clock, pages=Broken()).tick()  # type: ignore[arg-type]
    assert pages(db) == []
    with db.session() as session:
        assert (
            session.exec(select(EscalationFired).where(EscalationFired.kind == "step")).all() == []
        )
    assert Fired(inc, "step", 0) in Escalator(s, db, clock=clock).tick()


def test_reminders_go_to_every_chat_the_question_was_asked_in_once_each(world: Any) -> None:
    _, db, clock, esc = world
    inc = asked_incident(db, T0, chats=("1001", "-1002"))
    other = asked_incident(db, T0, chats=("1001",))
    clock.advance(minutes=15)
    esc.tick()
    got = replies(db, inc)
    assert [chat for chat, _ in got] == ["-1002", "1001"]
    assert f"incident #{inc}" in got[0][1] and "waited 15m" in got[0][1]
    assert f"guard ack {inc}" in got[0][1]
    assert len(replies(db, other)) == 1
    clock.advance(minutes=5)
    esc.tick()
    assert len(replies(db, inc)) == 2  # not again before the next 15 minutes
    clock.advance(minutes=10)
    esc.tick()
    assert len(replies(db, inc)) == 4 and "waited 30m" in replies(db, inc)[-1][1]


def test_an_acknowledgement_stops_steps_and_reminders_and_acknowledges_the_pages(
    world: Any,
) -> None:
    s, db, clock, esc = world
    inc = asked_incident(db, T0, chats=("1001", "-1002"))
    clock.advance(minutes=16)
    esc.tick()  # step 1 paged pagerduty:primary, reminder 1
    done = acknowledge(
        db,
        inc,
        Actor("telegram", str(OPERATOR)),
        gate_from_settings(s, db),
        now=clock(),
    )
    assert done.first and done.by == f"telegram:{OPERATOR}"
    assert ("pagerduty:primary", f"ack:{inc}:0", "acknowledge") in pages(db)
    assert [t for c, t in replies(db, inc) if t.startswith("Acknowledged")] == [
        f"Acknowledged by telegram:{OPERATOR}: escalation and reminders stop."
    ] * 2
    before = (len(pages(db)), len(replies(db, inc)))
    clock.advance(hours=2)
    assert esc.tick() == []
    assert (len(pages(db)), len(replies(db, inc))) == before
    again = acknowledge(db, inc, Actor("cli", "ops"), gate_from_settings(s, db))
    assert not again.first and again.by == f"telegram:{OPERATOR}"
    with db.session() as session:
        assert session.exec(
            select(AuditEntry).where(AuditEntry.action == "incident.acknowledged")
        ).one()


def test_a_viewer_may_not_acknowledge(world: Any) -> None:
    s, db, clock, esc = world
    inc = asked_incident(db, T0)
    with pytest.raises(NotAuthorised, match="needs operator; you are viewer"):
        acknowledge(db, inc, Actor("telegram", str(VIEWER)), gate_from_settings(s, db))
    with db.session() as session:
        assert session.get(IncidentAck, (inc, 0)) is None
        refused = session.exec(select(AuditEntry).where(AuditEntry.action == "human.refused")).one()
    assert refused.data["verb"] == "ack" and refused.actor == f"telegram:{VIEWER}"
    clock.advance(minutes=15)
    assert Fired(inc, "step", 0) in esc.tick()  # the refusal stopped nothing


def test_only_incidents_still_waiting_escalate(world: Any) -> None:
    _, db, clock, esc = world
    healed = asked_incident(db, T0)
    with db.session() as session:
        row = session.get(Incident, healed)
        assert row is not None
        row.state = IncidentState.resolved
        session.add(row)
    escalated = asked_incident(db, T0, state="escalated")
    clock.advance(minutes=15)
    assert {f.incident_id for f in esc.tick()} == {escalated}


def test_quiet_hours_hold_a_warnings_reminders_and_steps_not_a_criticals(tmp_path: Path) -> None:
    s = settings(tmp_path, quiet_hours={"from": "22:00", "to": "08:00", "timezone": "UTC"})
    db = open_database(s.database_url)
    night = datetime(2026, 12, 5, 23, 0, tzinfo=UTC)
    clock = Clock(night)
    esc = Escalator(s, db, clock=clock)
    warning = asked_incident(db, datetime(2026, 12, 5, 21, 50, tzinfo=UTC), severity="warning")
    critical = asked_incident(db, datetime(2026, 12, 5, 21, 50, tzinfo=UTC))
    assert {f.incident_id for f in esc.tick()} == {critical}
    clock.now = datetime(2026, 12, 6, 8, 0, tzinfo=UTC)  # the window is over
    assert {f.incident_id for f in esc.tick()} == {warning, critical}


def test_a_reopened_incident_escalates_and_is_acknowledged_anew(world: Any) -> None:
    s, db, clock, esc = world
    inc = asked_incident(db, T0)
    clock.advance(minutes=15)
    esc.tick()
    acknowledge(db, inc, Actor("cli", "ops"), gate_from_settings(s, db))
    with db.session() as session:  # it healed, came back, and was asked about again
        row = session.get(Incident, inc)
        assert row is not None
        row.reopen_count = 1
        session.add(row)
        session.add(
            IncidentTimeline(incident_id=inc, at=clock.now, type="asked_human", message="?")
        )
    clock.advance(minutes=15)
    assert Fired(inc, "step", 0) in esc.tick()
    assert [p for p in pages(db) if p[2] == "trigger"] == [
        ("pagerduty:primary", f"escalation:{inc}:0", "trigger"),
        ("pagerduty:primary", f"escalation:{inc}:0:1", "trigger"),
    ]
    again = acknowledge(db, inc, Actor("cli", "ops"), gate_from_settings(s, db))
    assert again.first


def test_pruning_an_old_incident_removes_its_escalation_rows(world: Any, tmp_path: Path) -> None:
    from guard.store.retention import prune

    s, db, clock, esc = world
    inc = asked_incident(db, T0)
    clock.advance(minutes=16)
    esc.tick()
    acknowledge(db, inc, Actor("cli", "ops"), gate_from_settings(s, db))
    with db.session() as session:
        row = session.get(Incident, inc)
        assert row is not None
        row.state, row.resolved_at = IncidentState.resolved, T0
        session.add(row)
    done = prune(db, 3600, tmp_path / "anchors.jsonl", now=T0 + timedelta(days=2))
    assert done.rows["incident_ack"] == 1 and done.rows["escalation_fired"] == 2
    with db.session() as session:
        assert session.exec(select(EscalationFired)).all() == []
