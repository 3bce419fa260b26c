"""Triage: for-N, dedup, auto-resolve, flap control, and the recorded state machine."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from sqlmodel import select

from guard.config import TriageSettings
from guard.domain.exceptions import InvalidTransition
from guard.domain.records import Observation, Signal, utcnow
from guard.incidents import transition
from guard.store import audit
from guard.store.db import open_database
from guard.store.models import AuditEntry, Incident, IncidentState, IncidentTimeline
from guard.triage import Triage, TriagePolicy
from guard.triage.engine import CALM_EVERY

pytestmark = pytest.mark.unit


def fail(msg: str = "http://svc/ answered 503 (expected 200)", **kw) -> Observation:
    return Observation(
        [
            Signal(
                monitor_id="web",
                source="http",
                target="http://svc/",
                kind="http_status",
                message=msg,
                **kw,
            )
        ],
        monitor_id="web",
    )


def ok(**kw) -> Observation:
    return Observation(
        [
            Signal(
                monitor_id="web",
                source="http",
                target="http://svc/",
                kind="http_ok",
                message="healthy",
                status="ok",
                **kw,
            )
        ],
        monitor_id="web",
    )


@pytest.fixture
def db(tmp_path: Path):
    database = open_database(f"sqlite:///{tmp_path / 'g.db'}")
    yield database
    database.dispose()


def incidents(db) -> list[Incident]:
    with db.session() as s:
        return list(s.exec(select(Incident)).all())


def test_for_n_needs_consecutive_failures(db):
    t = Triage(db, TriageSettings(), {"web": TriagePolicy(for_count=3)})
    t.process([fail()])
    t.process([fail()])
    t.process([ok()])  # the streak is broken
    t.process([fail()])
    t.process([fail()])
    assert incidents(db) == []
    events = t.process([fail()])
    assert [e.type for e in events] == ["opened"]
    (inc,) = incidents(db)
    assert inc.count == 3 and inc.state == "open"


def test_repeats_count_on_one_incident_and_auto_resolve(db):
    t = Triage(db, TriageSettings())
    t.process([fail("http://svc/ answered 503 (expected 200)")])
    t.process([fail("http://svc/ answered 502 (expected 200)")])  # same fault, masked number
    (inc,) = incidents(db)
    assert inc.count == 2
    events = t.process([ok()])
    assert [e.type for e in events] == ["resolved"]
    assert incidents(db)[0].state == "resolved" and incidents(db)[0].resolved_at is not None


def test_a_pass_observed_before_the_last_failure_is_stale_news(db):
    """A stream's snapshot taken before a kill, arriving after its ``die``: the container is
    not running again (a CI run: the incident opened and resolved in the same second)."""
    from datetime import timedelta

    from guard.domain.records import utcnow

    t = Triage(db, TriageSettings())
    died = utcnow()
    assert [e.type for e in t.process([fail(observed_at=died)])] == ["opened"]
    stale = ok(observed_at=died - timedelta(seconds=1))
    assert t.process([stale]) == [] and incidents(db)[0].state == "open"
    assert t.process([fail(observed_at=died), stale]) == []  # one batch: still open
    assert incidents(db)[0].state == "open"
    later = ok(observed_at=died + timedelta(seconds=1))
    assert [e.type for e in t.process([later])] == ["resolved"]


def test_auto_resolve_can_be_turned_off(db):
    t = Triage(db, TriageSettings(), {"web": TriagePolicy(auto_resolve=False)})
    t.process([fail()])
    t.process([ok()])
    assert incidents(db)[0].state == "open"


def test_flapping_is_one_quiet_incident(db):
    settings = TriageSettings(flap_window=600, flap_threshold=3)
    t = Triage(db, settings)
    types: list[str] = []
    now = utcnow()
    for i in range(10):  # fail, recover, fail, recover...
        types += [e.type for e in t.process([fail(observed_at=now + timedelta(seconds=2 * i))])]
        types += [e.type for e in t.process([ok(observed_at=now + timedelta(seconds=2 * i + 1))])]
    assert len(incidents(db)) == 1
    assert types.count("opened") == 1
    assert types.count("flapping") == 1  # announced once
    assert types.count("reopened") == 2  # before it was recognised as flapping
    inc = incidents(db)[0]
    assert inc.flapping and inc.state == "open"  # held open while it keeps bouncing
    # stable for the whole window: now it resolves
    events = t.process([ok(observed_at=now + timedelta(seconds=20 + 601))])
    assert [e.type for e in events] == ["resolved"]


def test_agent_owned_states_are_not_auto_resolved(db):
    t = Triage(db, TriageSettings())
    t.process([fail()])
    with db.session() as s:
        inc = s.exec(select(Incident)).one()
        transition(s, inc, IncidentState.remediating, actor="agent", reason="restarting")
    t.process([ok()])
    assert incidents(db)[0].state == "remediating"


def passed_while(db, t: Triage, state: IncidentState, *between: Observation) -> Incident:
    """Open an incident, pass its check while the agent holds it in ``state``, feed
    ``between``, then let the agent ask a human; return the incident after triage's next sweep."""
    t.process([fail()])
    with db.session() as s:
        inc = s.exec(select(Incident)).one()
        transition(s, inc, state, actor="agent", reason="working")
    t.process([ok()])  # a watch says so once: the container started, the pod is ready
    assert incidents(db)[0].state == state
    for obs in between:
        t.process([obs])
    with db.session() as s:
        inc = s.exec(select(Incident)).one()
        transition(s, inc, IncidentState.awaiting_human, actor="agent", reason="asking")
    t._calmed_at = -CALM_EVERY  # the next batch sweeps (once a second in a run)
    t.process([])
    return incidents(db)[0]


def test_a_pass_while_the_agent_works_resolves_once_it_lets_go(db):
    inc = passed_while(db, Triage(db, TriageSettings()), IncidentState.diagnosing)
    assert inc.state == "resolved"  # not a question about a healed service, open for ever


def test_a_pass_held_back_is_forgotten_when_the_check_fails_again(db):
    inc = passed_while(db, Triage(db, TriageSettings()), IncidentState.diagnosing, fail())
    assert inc.state == "awaiting_human"


def test_a_pass_while_a_remedy_runs_is_left_to_its_verification(db):
    t = Triage(db, TriageSettings())
    # Guard's own restart brought it up: the remedy's verification says whether it holds
    assert passed_while(db, t, IncidentState.remediating).state == "awaiting_human"
    t.process([ok()])  # a pass after it: that one ends it
    assert incidents(db)[0].state == "resolved"


def test_state_machine_records_timeline_and_audit(db):
    t = Triage(db, TriageSettings())
    t.process([fail()])
    with db.session() as s:
        inc = s.exec(select(Incident)).one()
        transition(s, inc, IncidentState.diagnosing, actor="agent", reason="looking")
        transition(s, inc, IncidentState.escalated, actor="agent", reason="no remedy")
        with pytest.raises(InvalidTransition, match="cannot go from escalated to diagnosing"):
            transition(s, inc, IncidentState.diagnosing, actor="agent", reason="x")
    with db.session() as s:
        timeline = s.exec(select(IncidentTimeline)).all()
        assert [(e.type, e.to_state) for e in timeline] == [
            ("opened", "open"),
            ("state_changed", "diagnosing"),
            ("state_changed", "escalated"),
        ]
        actions = [a.action for a in s.exec(select(AuditEntry)).all()]
        assert actions == ["incident.opened", "incident.state_changed", "incident.state_changed"]
        assert audit.verify(s) == 3


def test_all_states_exist():
    assert {s.value for s in IncidentState} >= {
        "open",
        "diagnosing",
        "awaiting_human",
        "remediating",
        "resolved",
        "escalated",
        "muted",
    }


def test_monitor_state_is_saved_with_the_signals(db):
    t = Triage(db, TriageSettings())
    obs = Observation(fail().signals, {"position": {"offset": 42}}, "web")
    t.process([obs])
    from guard.store.state import get_state

    with db.session() as s:
        assert get_state(s, "monitor:web") == {"position": {"offset": 42}}


def test_a_passing_check_writes_nothing_until_something_changes(db):
    from guard.store.models import MonitorState

    def check_row() -> MonitorState:
        with db.session() as s:
            return s.get(MonitorState, "check:web|http://svc/")

    t = Triage(db, TriageSettings())
    t.process([ok()])
    first = check_row()
    for _ in range(3):
        t.process([ok()])
    assert check_row().updated_at == first.updated_at  # the same state, not written again
    t.process([fail()])  # a failure after quiet ok checks still opens, and the next ok resolves
    assert check_row().value["last"] == "firing"
    events = t.process([ok()])
    assert [e.type for e in events] == ["resolved"]
    assert check_row().value["failures"] == 0


def test_a_batch_of_passes_looks_for_what_they_resolve_in_one_query(db):
    import re

    from sqlalchemy import event

    def passing(n: int) -> Observation:
        return Observation([replace(ok().signals[0], target=f"http://svc-{n}/")], monitor_id="web")

    t = Triage(db, TriageSettings())
    t.process([_fail_at(7)])  # one open incident
    queries: list[str] = []
    event.listen(db.engine, "before_cursor_execute", lambda *a: queries.append(a[2]))
    events = t.process([passing(n) for n in range(200)])
    looks = [q for q in queries if re.search(r"FROM incident\b(?!_)", q)]
    assert [e.type for e in events] == ["resolved"]  # svc-7's, found by the look
    assert len(looks) <= 3  # the look, then svc-7's settle (was one per check: 200)
    queries.clear()
    for _ in range(2):
        t.process([passing(n) for n in range(200)])
    # svc-7 looked at once more (its incident was there at its last look), then all quiet
    assert len([q for q in queries if re.search(r"FROM incident\b(?!_)", q)]) == 1


def _fail_at(n: int) -> Observation:
    return Observation([replace(fail().signals[0], target=f"http://svc-{n}/")], monitor_id="web")
