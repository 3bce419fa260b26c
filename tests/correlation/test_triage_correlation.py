"""Correlation in triage: one fault across services is one incident, within the window only."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import select

from guard.config import TriageSettings
from guard.playbooks.services import ServiceMap
from guard.store.correlation import RelatedSignal
from guard.store.db import open_database
from guard.store.models import Incident, IncidentState, IncidentTimeline
from guard.triage import Triage
from tests.correlation.helpers import obs, shop_services, signal

pytestmark = pytest.mark.unit


@pytest.fixture
def db(tmp_path: Path):
    database = open_database(f"sqlite:///{tmp_path / 'g.db'}")
    yield database
    database.dispose()


def triage(db, services: ServiceMap, window: float = 120.0) -> Triage:
    t = Triage(db, TriageSettings(correlate_window=window, flap_window=1))
    t.correlation.services = services
    return t


def stored(db) -> tuple[list[Incident], list[RelatedSignal]]:
    with db.session() as s:
        return list(s.exec(select(Incident)).all()), list(s.exec(select(RelatedSignal)).all())


def test_a_database_and_five_dependants_within_the_window_are_one_incident(db):
    t = triage(db, shop_services())
    events = t.process(obs(signal("db", 0)))
    assert [e.type for e in events] == ["opened"]
    events = t.process(obs(*(signal(f"api-{i}", 10 + i) for i in range(5))))
    assert [e.type for e in events] == ["related"] * 5
    incidents, related = stored(db)
    assert len(incidents) == 1
    root = incidents[0]
    assert root.monitor_id == "db" and root.details["service"] == "db"
    assert sorted(r.monitor_id for r in related) == [f"api-{i}" for i in range(5)]
    assert {r.incident_id for r in related} == {root.id}
    # each keeps its own timeline: counts and first/last seen
    t.process(obs(signal("api-0", 30), signal("api-0", 40)))
    _, related = stored(db)
    api0 = next(r for r in related if r.monitor_id == "api-0")
    assert api0.count == 3 and api0.first_seen < api0.last_seen
    assert len(stored(db)[0]) == 1
    with db.session() as s:
        joined = s.exec(select(IncidentTimeline).where(IncidentTimeline.type == "related")).all()
    assert len(joined) == 5 and all(j.incident_id == root.id for j in joined)


def test_after_the_window_they_are_separate_incidents(db):
    t = triage(db, shop_services())
    t.process(obs(signal("db", 0)))
    t.process(obs(*(signal(f"api-{i}", 121 + i) for i in range(5))))
    incidents, related = stored(db)
    assert len(incidents) == 6 and related == []
    assert sorted(i.details["service"] for i in incidents) == [
        "api-0",
        "api-1",
        "api-2",
        "api-3",
        "api-4",
        "db",
    ]


def test_the_dependency_is_the_root_when_dependants_come_first_it_joins_the_first(db):
    t = triage(db, shop_services(2))
    t.process(obs(signal("api-0", 0)))
    t.process(obs(signal("db", 1)))  # the database's signal comes a second later
    t.process(obs(signal("api-1", 2)))
    incidents, related = stored(db)
    assert [i.monitor_id for i in incidents] == ["api-0"]  # the first one stays the root
    assert sorted(r.monitor_id for r in related) == ["api-1", "db"]


def test_siblings_and_unrelated_services_are_not_joined(db):
    services = ServiceMap.of(
        {"db": "db", "api-0": "api-0", "api-1": "api-1", "pay": "payments"},
        {"api-0": ["db"], "api-1": ["db"]},
    )
    t = triage(db, services)
    t.process(obs(signal("api-0", 0), signal("api-1", 1), signal("pay", 2)))
    incidents, related = stored(db)
    assert len(incidents) == 3 and related == []  # two APIs on a healthy db: two faults


def test_a_dependency_root_is_preferred_over_an_earlier_same_service_incident(db):
    services = ServiceMap.of({"api": "api", "api-http": "api", "db": "db"}, {"api": ["db"]})
    t = triage(db, services)
    t.process(obs(signal("api", 0)))
    t.process(obs(signal("db", 1)))  # joins api's incident (the first)
    t.process(obs(signal("api-http", 2)))
    incidents, related = stored(db)
    assert len(incidents) == 1 and len(related) == 2


def test_monitors_without_a_service_never_join(db):
    t = triage(db, ServiceMap())
    t.process(obs(signal("a", 0), signal("b", 1)))
    assert len(stored(db)[0]) == 2


def test_a_window_of_zero_turns_correlation_off(db):
    t = triage(db, shop_services(1), window=0)
    t.process(obs(signal("db", 0), signal("api-0", 1)))
    assert len(stored(db)[0]) == 2


def test_a_related_signal_still_failing_holds_the_root_open(db):
    t = triage(db, shop_services(1))
    t.process(obs(signal("db", 0), signal("api-0", 1)))
    t.process(obs(signal("db", 5, status="ok")))  # the root's own check passes...
    incidents, _ = stored(db)
    assert incidents[0].state == IncidentState.open  # ...but the API still fails
    t.process(obs(signal("api-0", 6, status="ok")))
    assert stored(db)[1][0].status == "ok"
    t.process(obs(signal("db", 7, status="ok")))
    assert stored(db)[0][0].state == IncidentState.resolved


def test_one_monitors_distinct_findings_keep_their_incidents_until_another_monitor_joins(db):
    t = Triage(db, TriageSettings())
    t.correlation.services = ServiceMap.of({"api-log": "api", "api-http": "api"}, {})
    one = signal("api-log", 0, message="error A in module one")
    two = signal("api-log", 1, message="error B in another place entirely")
    assert [e.type for e in t.process(obs(one, two))] == ["opened", "opened"]
    assert [e.type for e in t.process(obs(signal("api-http", 2)))] == ["related"]
    three = signal("api-log", 3, message="error C somewhere else again")
    assert [e.type for e in t.process(obs(three))] == ["related"]  # the incident is shared now
    incidents, related = stored(db)
    assert len(incidents) == 2 and {r.monitor_id for r in related} == {"api-http", "api-log"}


def test_a_batch_that_fails_stores_no_join(db):
    t = triage(db, shop_services(1))
    t.process(obs(signal("db", 0)))
    calls = {"n": 0}
    real = t.correlation.join

    def join_then_fail(*args, **kwargs):
        real(*args, **kwargs)
        calls["n"] += 1
        raise RuntimeError("disk gone")

    t.correlation.join = join_then_fail  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        t.process(obs(signal("api-0", 1)))
    assert calls["n"] == 1
    incidents, related = stored(db)
    assert len(incidents) == 1 and related == []  # rolled back with its batch
    t.correlation.join = real  # type: ignore[method-assign]
    t.process(obs(signal("api-0", 2)))  # stored whole once it works
    assert len(stored(db)[1]) == 1


def test_joins_count_toward_the_storm_breakers_cap_and_a_storm_keeps_its_service(db):
    t = Triage(db, TriageSettings(max_new_incidents=3, storm_window=600))
    t.correlation.services = ServiceMap.of({"api": "api", "api-log": "api"}, {})
    assert [e.type for e in t.process(obs(signal("api", 0)))] == ["opened"]
    lines = [signal("api-log", i, message=f"error {'x' * i} in module {i}") for i in range(6)]
    events = t.process(obs(*lines))
    assert [e.type for e in events] == ["related", "related", "related", "opened"]
    incidents, related = stored(db)
    storm = next(i for i in incidents if i.kind == "storm")
    assert len(related) == 3 and storm.count == 3  # 3 joined (the log's cap), then the storm
    assert storm.details["service"] == "api"


def test_a_related_signal_whose_monitor_is_gone_does_not_hold_the_root(db):
    t = triage(db, shop_services(1))
    t.process(obs(signal("db", 0), signal("api-0", 1)))
    t.correlation.services = ServiceMap.of({"db": "db"}, {})  # api-0 removed from playbooks
    t.process(obs(signal("db", 5, status="ok")))
    assert stored(db)[0][0].state == IncidentState.resolved


def test_a_database_and_five_dependants_are_one_incident_in_either_order(db):
    t = triage(db, shop_services())
    t.process(obs(signal("api-3", 0)))  # a dependant fails first
    t.process(obs(signal("db", 1)))  # the database's own signal a second later
    t.process(obs(*(signal(f"api-{i}", 2 + i) for i in (0, 1, 2, 4))))
    incidents, related = stored(db)
    assert [i.monitor_id for i in incidents] == ["api-3"]
    assert sorted(r.monitor_id for r in related) == ["api-0", "api-1", "api-2", "api-4", "db"]


def mute_all(db) -> None:
    with db.session() as s:
        for inc in s.exec(select(Incident)).all():
            inc.state = IncidentState.muted
            s.add(inc)


def test_a_muted_incident_takes_no_signal_of_another_monitor(db):
    """Security review #39 item 4: muting the noise must not silence the real fault."""
    t = triage(db, shop_services(1))
    t.process(obs(signal("db", 0)))
    mute_all(db)
    events = t.process(obs(signal("api-0", 1)))
    assert [e.type for e in events] == ["opened"]
    incidents, related = stored(db)
    assert len(incidents) == 2 and related == []
    t.process(obs(signal("db", 2)))  # the muted incident's own monitor: counted on it, muted
    assert [i.count for i in stored(db)[0]] == [2, 1]


def test_a_related_signal_of_a_root_muted_since_opens_its_own_incident(db):
    t = triage(db, shop_services(1))
    t.process(obs(signal("db", 0), signal("api-0", 1)))
    assert len(stored(db)[1]) == 1
    mute_all(db)
    events = t.process(obs(signal("api-0", 2)))  # still failing: no longer absorbed
    assert [e.type for e in events] == ["opened"]
    incidents, related = stored(db)
    assert [i.monitor_id for i in incidents] == ["db", "api-0"]
    assert related[0].count == 1  # not counted on the muted root's row
