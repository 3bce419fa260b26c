"""A check in flight while its incident was resolved answers late with the target as it was
before the fix: that failure is older than the verdict and reopens nothing (a CI run showed a
trusted skill's verified heal reopened at once by such a check, asked again, and never ended).
A failure asked after the verdict reopens at once, as before."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlmodel import select

from guard.config import TriageSettings
from guard.domain.records import Observation, Signal
from guard.incidents import transition
from guard.store.db import open_database
from guard.store.models import Incident, IncidentState, IncidentTimeline
from guard.triage import Triage
from guard.triage.waiting import as_state, from_state

pytestmark = pytest.mark.unit


def _web(kind: str, message: str, **kw: object) -> Observation:
    sig = Signal(
        monitor_id="web",
        source="http",
        target="http://svc/healthz",
        kind=kind,
        message=message,
        **kw,  # type: ignore[arg-type]
    )
    return Observation([sig], monitor_id="web")


def fail(**kw: object) -> Observation:
    return _web("http_status", "http://svc/healthz answered 503 (expected 200)", **kw)


@pytest.fixture
def db(tmp_path: Path):  # type: ignore[no-untyped-def]
    database = open_database(f"sqlite:///{tmp_path / 'g.db'}")
    yield database
    database.dispose()


def _resolve_by_verification(db) -> Incident:  # type: ignore[no-untyped-def]
    with db.session() as s:
        inc = s.exec(select(Incident)).one()
        transition(s, inc, IncidentState.resolved, actor="agent", reason="healed by skill web-fix")
        s.commit()
        s.refresh(inc)
        return inc


def test_a_failure_asked_before_the_heal_was_verified_does_not_reopen_it(db) -> None:  # type: ignore[no-untyped-def]
    t = Triage(db, TriageSettings())
    t.process([fail()])
    inc = _resolve_by_verification(db)
    assert inc.resolved_at is not None
    asked = inc.resolved_at - timedelta(seconds=1)  # in flight while the fix was verified
    events = t.process([fail(started_at=asked, observed_at=inc.resolved_at + timedelta(seconds=1))])
    assert events == []
    with db.session() as s:
        (row,) = s.exec(select(Incident)).all()
        assert row.state == "resolved" and row.reopen_count == 0
        notes = s.exec(
            select(IncidentTimeline).where(IncidentTimeline.type == "stale_failure")
        ).all()
        assert len(notes) == 1 and "not reopened, the next check decides" in notes[0].message
    # the next check, asked after the verdict, still fails: that reopens it at once
    later = fail(started_at=inc.resolved_at + timedelta(seconds=2))
    assert [e.type for e in t.process([later])] == ["reopened"]


def test_a_failure_without_a_start_or_asked_after_the_verdict_reopens_as_before(db) -> None:  # type: ignore[no-untyped-def]
    t = Triage(db, TriageSettings())
    t.process([fail()])
    _resolve_by_verification(db)
    assert [e.type for e in t.process([fail()])] == ["reopened"]  # a log line, an event: no start


def test_a_pass_and_a_later_failure_stored_late_together_resolve_then_reopen(db) -> None:  # type: ignore[no-untyped-def]
    """Behind a full disk (the fault soak, twice in CI) a pass and the next outage's failure,
    asked after it, reach the store in one batch: the resolution is dated when the pass was
    observed, so the failure is new and reopens (it was a stale note: an outage lost)."""
    t = Triage(db, TriageSettings())
    start = datetime.now(UTC) - timedelta(seconds=30)
    t.process([fail(started_at=start, observed_at=start)])
    passed = start + timedelta(seconds=5)
    ok = _web("http_ok", "http://svc/healthz is healthy", status="ok", observed_at=passed)
    asked = passed + timedelta(seconds=10)
    late = fail(started_at=asked, observed_at=asked + timedelta(seconds=1))
    events = t.process([ok, late])  # stored only now
    assert [e.type for e in events] == ["resolved", "reopened"]
    with db.session() as s:
        (row,) = s.exec(select(Incident)).all()
        assert row.state == "open" and row.reopen_count == 1
        notes = s.exec(select(IncidentTimeline).where(IncidentTimeline.type == "stale_failure"))
        assert notes.all() == []


def test_a_held_signal_keeps_when_its_check_was_asked() -> None:
    (sig,) = fail(started_at=None).signals
    assert from_state(as_state(sig)).started_at is None
    asked = sig.observed_at - timedelta(seconds=3)
    (sig,) = fail(started_at=asked).signals
    assert from_state(as_state(sig)).started_at == asked


async def test_a_probe_s_failure_says_when_it_was_asked_and_a_log_line_does_not(
    db, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """The runner stamps a probe's signals (``MonitorKind.probe``): an HTTP check against a
    real server answering 503. A log line read by a check that began before a verdict may be
    newer than that start, and is never read again: it must reopen, so it carries none."""
    import asyncio
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from guard.app.monitoring import MonitorRunner
    from guard.monitors import build_monitor
    from guard.playbooks.models import HttpMonitorSpec, LogfileMonitorSpec

    class Down(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Down)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/healthz"
    log = tmp_path / "app.log"
    log.write_text("")
    web = build_monitor(HttpMonitorSpec.model_validate({"id": "web", "type": "http", "url": url}))
    app = build_monitor(
        LogfileMonitorSpec.model_validate(
            {
                "id": "app",
                "type": "logfile",
                "path": str(log),
                "rules": [{"kind": "fatal", "pattern": "FATAL"}],
            }
        )
    )

    async def put(obs: Observation) -> None:
        pass

    runner = MonitorRunner(db, [web, app], put, asyncio.Event())
    runner.baseline()
    try:
        before = datetime.now(UTC)
        (probe,) = [s for s in (await runner.check(web)).signals if s.source == "http"]
        log.write_text("FATAL: out of connections\n")
        (line,) = [s for s in (await runner.check(app)).signals if s.source == "logfile"]
    finally:
        await web.close()
        server.shutdown()
    assert probe.kind == "http_status" and probe.started_at is not None
    assert before <= probe.started_at <= probe.observed_at
    assert line.status == "firing" and line.started_at is None
