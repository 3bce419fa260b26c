"""Quiet hours with a frozen clock: a warning's question is held and asked at the window's end
(its buttons kept alive until then), a critical one is asked at once, a held one is asked at
once when its incident becomes critical, and one whose incident healed is dropped."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from guard.config import Settings
from guard.domain.records import utcnow
from guard.notify.base import HumanRequest, IncidentUpdate
from guard.notify.escalation import asked_at
from guard.notify.fanout import ChannelNotifier
from guard.notify.quiet import QuietNotifier, release_held, wrap_quiet
from guard.notify.telegram.markup import HtmlMarkup
from guard.store.db import Database, open_database
from guard.store.escalation import QuietHeld
from guard.store.models import Approval, Incident, IncidentState, IncidentTimeline, OutboxMessage
from tests.escalation.helpers import Clock
from tests.helpers.agent import stored_incident

pytestmark = pytest.mark.unit

# Europe/Madrid is UTC+1 in December: the window 22:00-08:00 is 21:00-07:00 UTC
NIGHT = datetime(2026, 12, 5, 23, 0, tzinfo=UTC)
MORNING = datetime(2026, 12, 6, 7, 0, tzinfo=UTC)


@pytest.fixture
def quiet(tmp_path: Path) -> tuple[Settings, Database, Clock, QuietNotifier]:
    s = Settings(
        data_dir=tmp_path,
        quiet_hours={
            "from": "22:00",
            "to": "08:00",
            "timezone": "Europe/Madrid",
            "below": "critical",
        },
    )
    db = open_database(s.database_url)
    clock = Clock(NIGHT)
    inner = ChannelNotifier(db, "telegram", "1001", HtmlMarkup())
    return s, db, clock, QuietNotifier(inner, s, db, clock)


def incident(db: Database, severity: str) -> HumanRequest:
    """An incident waiting for a human, and the request asking about it (with live buttons)."""
    with db.session() as s:
        inc = stored_incident(s, IncidentState.awaiting_human, severity=severity, title="db slow")
        for approval in ("deny-" + str(inc.id), "mute-" + str(inc.id)):
            s.add(
                Approval(
                    id=approval,
                    incident_id=inc.id,
                    kind=approval.split("-")[0],
                    expires_at=utcnow() + timedelta(minutes=30),
                )
            )
        incident_id = int(inc.id)
    return HumanRequest(
        incident_id=incident_id,
        title="db slow",
        severity=severity,
        target="db",
        count=1,
        evidence="",
        deny_id=f"deny-{incident_id}",
        mute_id=f"mute-{incident_id}",
    )


def asks(db: Database, incident_id: int) -> list[OutboxMessage]:
    with db.session() as s:
        return list(
            s.exec(
                select(OutboxMessage).where(
                    OutboxMessage.incident_id == incident_id, OutboxMessage.role == "incident"
                )
            ).all()
        )


def held(db: Database, incident_id: int) -> QuietHeld:
    with db.session() as s:
        return s.exec(select(QuietHeld).where(QuietHeld.incident_id == incident_id)).one()


async def test_a_warning_is_held_and_asked_at_the_windows_end(quiet: Any) -> None:
    s, db, clock, notifier = quiet
    req = incident(db, "warning")
    await notifier.ask(req)
    assert asks(db, req.incident_id) == []
    row = held(db, req.incident_id)
    assert row.until == MORNING and row.released_at is None
    with db.session() as session:
        deny = session.get(Approval, req.deny_id)
        note = session.exec(
            select(IncidentTimeline).where(IncidentTimeline.type == "question_held")
        ).one()
        assert asked_at(session, req.incident_id) is None  # escalation waits for it too
    assert deny is not None and deny.expires_at == MORNING + timedelta(seconds=s.agent.approval_ttl)
    assert "waits until 2026-12-06T07:00" in note.message

    clock.now = datetime(2026, 12, 6, 3, 0, tzinfo=UTC)  # 04:00 in Madrid
    assert await notifier.release() == []
    assert asks(db, req.incident_id) == []

    clock.now = MORNING
    assert await notifier.release() == [req.incident_id]
    sent = asks(db, req.incident_id)
    assert len(sent) == 1 and "db slow" in sent[0].text
    assert sent[0].buttons  # its buttons, still alive (not expired at 07:00)
    row = held(db, req.incident_id)
    assert row.released_at == MORNING and row.outcome == "asked at the window's end"
    with db.session() as session:
        assert asked_at(session, req.incident_id) == MORNING  # escalation counts from here
    assert await notifier.release() == []
    assert len(asks(db, req.incident_id)) == 1


async def test_a_critical_question_is_asked_at_once(quiet: Any) -> None:
    _, db, _, notifier = quiet
    req = incident(db, "critical")
    await notifier.ask(req)
    assert len(asks(db, req.incident_id)) == 1
    with db.session() as s:
        assert s.exec(select(QuietHeld)).all() == []


async def test_a_held_question_is_asked_at_once_when_its_incident_becomes_critical(
    quiet: Any,
) -> None:
    _, db, clock, notifier = quiet
    req = incident(db, "warning")
    await notifier.ask(req)
    clock.advance(minutes=10)
    assert await notifier.release() == []
    with db.session() as s:  # as triage does when a worse signal lands on the incident
        inc = s.get(Incident, req.incident_id)
        assert inc is not None
        inc.severity = "critical"
        s.add(inc)
    assert await notifier.release() == [req.incident_id]
    sent = asks(db, req.incident_id)
    assert len(sent) == 1 and "critical" in sent[0].text
    assert held(db, req.incident_id).outcome == "asked at now critical"


async def test_a_question_already_critical_in_the_store_is_not_held(quiet: Any) -> None:
    _, db, _, notifier = quiet
    req = incident(db, "warning")
    with db.session() as s:
        inc = s.get(Incident, req.incident_id)
        assert inc is not None
        inc.severity = "critical"
        s.add(inc)
    await notifier.ask(req)  # the request says warning; the incident is critical by now
    assert len(asks(db, req.incident_id)) == 1


async def test_a_warning_in_the_day_is_asked_at_once(quiet: Any) -> None:
    _, db, clock, notifier = quiet
    clock.now = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
    req = incident(db, "warning")
    await notifier.ask(req)
    assert len(asks(db, req.incident_id)) == 1


async def test_a_held_question_whose_incident_healed_is_dropped_untold(quiet: Any) -> None:
    _, db, clock, notifier = quiet
    req = incident(db, "warning")
    other = incident(db, "warning")
    await notifier.ask(req)
    await notifier.ask(other)
    await notifier.update(IncidentUpdate(req.incident_id, "db slow", "resolved", "healed"))
    with db.session() as s:
        assert s.exec(select(OutboxMessage)).all() == []  # nobody was asked: nobody is told
        inc = s.get(Incident, other.incident_id)
        assert inc is not None
        inc.state = IncidentState.resolved  # healed without an update (triage resolved it)
        s.add(inc)
    clock.now = MORNING
    assert await notifier.release() == []
    assert held(db, req.incident_id).outcome == "dropped: resolved"
    assert held(db, other.incident_id).outcome == "dropped: resolved"
    assert asks(db, req.incident_id) == asks(db, other.incident_id) == []


async def test_a_release_asked_before_a_crash_is_not_asked_again(quiet: Any) -> None:
    """The release asks, then marks the hold released; a crash in between leaves an ask row
    newer than the hold, which the next release takes as done."""
    _, db, clock, notifier = quiet
    req = incident(db, "warning")
    await notifier.ask(req)
    clock.now = MORNING
    await notifier.inner.ask(req)  # what the crashed release had queued
    assert await notifier.release() == [req.incident_id]
    assert len(asks(db, req.incident_id)) == 1


async def test_updates_and_text_pass_through(quiet: Any) -> None:
    _, db, _, notifier = quiet
    req = incident(db, "critical")
    await notifier.ask(req)
    await notifier.update(IncidentUpdate(req.incident_id, "db slow", "resolved", "healed"))
    await notifier.send_text("daily report")
    with db.session() as s:
        methods = [(r.method, r.role) for r in s.exec(select(OutboxMessage)).all()]
    assert ("edit", "incident") in methods and ("send", "reply") in methods
    assert ("send", "text") in methods


def test_wrap_quiet_wraps_only_when_configured(tmp_path: Path) -> None:
    db = open_database(Settings(data_dir=tmp_path).database_url)
    inner = ChannelNotifier(db, "telegram", "1", HtmlMarkup())
    assert wrap_quiet(inner, Settings(data_dir=tmp_path), db) is None
    s = Settings(data_dir=tmp_path, quiet_hours={"from": "22:00", "to": "08:00"})
    wrapped = wrap_quiet(inner, s, db)
    assert isinstance(wrapped, QuietNotifier) and wrapped.inner is inner


async def test_release_held_releases_through_the_wrapper_it_is_given(quiet: Any) -> None:
    _, db, clock, notifier = quiet
    req = incident(db, "warning")
    await notifier.ask(req)
    clock.now = MORNING
    assert await release_held(None) == []  # no wrapper given: nothing to release
    assert held(db, req.incident_id).released_at is None
    assert await release_held(notifier) == [req.incident_id]
    assert len(asks(db, req.incident_id)) == 1


async def test_a_failing_release_is_logged_and_tried_again(quiet: Any) -> None:
    _, db, clock, notifier = quiet
    req = incident(db, "warning")
    await notifier.ask(req)
    clock.now = MORNING
    real = notifier.inner

    class Down:
        async def ask(self, request: HumanRequest) -> None:
            raise RuntimeError("channel down")

    notifier.inner = Down()
    assert await release_held(notifier) == []  # logged, not raised
    assert held(db, req.incident_id).released_at is None
    notifier.inner = real
    assert await release_held(notifier) == [req.incident_id]
