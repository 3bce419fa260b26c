"""Correlation in triage: one fault across services is one incident, within the window only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from guard.config import TriageSettings
from guard.playbooks.services import ServiceMap
from guard.store.correlation import RelatedSignal
from guard.store.db import open_database
from guard.store.models import Incident, IncidentState, IncidentTimeline
from guard.triage import Triage
from tests.correlation import helpers
from tests.correlation.helpers import obs, shop_services, signal

pytestmark = pytest.mark.unit


@pytest.fixture
def db(tmp_path: Path):
    database = open_database(f"sqlite:///{tmp_path / 'g.db'}")
    yield database
    database.dispose()


def triage(db, services: ServiceMap, window: float = 120.0) -> Triage:
    """Correlation's order alone: no symptom waits for its cause (``test_waiting``)."""
    t = Triage(db, TriageSettings(correlate_window=window, flap_window=1, symptom_wait=0))
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
    t = Triage(db, TriageSettings(symptom_wait=0))
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
    t = Triage(db, TriageSettings(max_new_incidents=3, storm_window=600, symptom_wait=0))
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


# -- issue #40 item 2: correlation that never hides a fault -------------------------------------


def test_a_root_still_firing_takes_a_dependants_signal_long_after_it_began(db):
    """PostgreSQL out of connections: its log fires for minutes; the HTTP check failing three
    minutes in is the same fault, not a second incident."""
    services = ServiceMap.of({"pg-log": "pg", "app-http": "app"}, {"app": ["pg"]})
    t = triage(db, services)
    for s in range(0, 200, 20):  # "too many clients" every 20 s for over 3 minutes
        t.process(obs(signal("pg-log", s, kind="db_too_many_connections")))
    assert [e.type for e in t.process(obs(signal("app-http", 200)))] == ["related"]
    incidents, related = stored(db)
    assert len(incidents) == 1 and [r.monitor_id for r in related] == ["app-http"]


def test_a_root_whose_own_signals_stopped_takes_nothing_though_joins_kept_it_seen(db):
    services = ServiceMap.of({"pg-log": "pg", "app-http": "app", "app-log": "app"}, {})
    services = ServiceMap.of(services.monitors, {"app": ["pg"]})
    t = triage(db, services)
    t.process(obs(signal("pg-log", 0)))
    t.process(obs(signal("app-http", 100), signal("app-http", 200)))  # joined; seen at 200
    assert [e.type for e in t.process(obs(signal("app-log", 210)))] == ["opened"]  # pg: stale


def test_a_container_death_never_joins_an_older_fault_of_another_kind(db):
    """An OOM kill while a log's "disk full" incident of the same service is open is a fault
    of its own: a new incident, asked (not a related signal nobody hears of)."""
    services = ServiceMap.of({"app-log": "app", "app-container": "app"}, {})
    t = triage(db, services)
    t.process(obs(signal("app-log", 0, kind="disk_full", details={"rule": "disk full"})))
    t.process(obs(signal("app-log", 50, kind="disk_full", details={"rule": "disk full"})))
    oom = signal("app-container", 60, source="docker", target="app", kind="container_oom_killed")
    assert [e.type for e in t.process(obs(oom))] == ["opened"]
    incidents, related = stored(db)
    assert [i.kind for i in incidents] == ["disk_full", "container_oom_killed"] and not related


def test_a_container_death_seen_just_after_its_symptoms_joins_them(db):
    """The proxy's log can beat the container's exit event by a second: the exit is the cause
    of what the incident already shows, and joins it."""
    services = ServiceMap.of({"app-log": "app", "app-container": "app"}, {})
    t = triage(db, services)
    t.process(obs(signal("app-log", 0, kind="upstream_refused", details={"rule": "refused"})))
    died = signal("app-container", 2, source="docker", target="app", kind="container_exited")
    assert [e.type for e in t.process(obs(died))] == ["related"]


def test_correlation_is_decided_before_reopening(db):
    """nginx 502 with its upstream down: the proxy's 502 incident resolved a minute ago; its
    502 now joins the live upstream incident rather than reopening the old one."""
    services = ServiceMap.of({"nginx-log": "nginx", "app-container": "app"}, {"nginx": ["app"]})
    t = Triage(db, TriageSettings(flap_window=600, symptom_wait=0))
    t.correlation.services = services
    bad: dict[str, Any] = {"kind": "bad_gateway", "details": {"rule": "502"}}
    t.process(obs(signal("nginx-log", 0, **bad)))
    with db.session() as s:  # a human resolved it
        (old,) = s.exec(select(Incident)).all()
        old.state, old.resolved_at = IncidentState.resolved, helpers.at(30)
        s.add(old)
    down = signal("app-container", 60, source="docker", target="app", kind="container_exited")
    t.process(obs(down))
    assert [e.type for e in t.process(obs(signal("nginx-log", 61, **bad)))] == ["related"]
    incidents, related = stored(db)
    assert [(i.kind, i.state) for i in incidents] == [
        ("bad_gateway", IncidentState.resolved),
        ("container_exited", IncidentState.open),
    ]
    assert [r.kind for r in related] == ["bad_gateway"]
