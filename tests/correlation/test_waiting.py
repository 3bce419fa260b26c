"""``triage.symptom_wait``: a dependant's symptom waits for its cause, so the cause is the root.

Issue 40's last race: nginx's upstream line reached triage a moment before the app's
``container_restarting``, opened an incident on ``web`` that the app's restart then joined, and
the skill that heals the app was no candidate. Each test shows what ``symptom_wait=0`` (the old
order) got wrong where it matters.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import select

from guard.config import TriageSettings
from guard.playbooks.services import ServiceMap
from guard.store.correlation import RelatedSignal
from guard.store.db import open_database
from guard.store.models import Incident, IncidentState
from guard.triage import Triage, waiting
from guard.triage.waiting import MOST, Waiting
from tests.correlation.helpers import at, obs, shop_services, signal

pytestmark = pytest.mark.unit

WAIT = 0.5


@pytest.fixture
def db(tmp_path: Path):
    database = open_database(f"sqlite:///{tmp_path / 'g.db'}")
    yield database
    database.dispose()


def triage(db, wait: float = WAIT) -> Triage:
    t = Triage(db, TriageSettings(symptom_wait=wait, flap_window=600))
    t.correlation.services = shop_services(2)
    return t


def stored(db) -> tuple[list[Incident], list[RelatedSignal]]:
    with db.session() as s:
        return list(s.exec(select(Incident)).all()), list(s.exec(select(RelatedSignal)).all())


CLOCK = [0.0]  # seconds after the helpers' T0: the wait's clock, moved by ``released``


@pytest.fixture(autouse=True)
def clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The wait runs on a clock the test moves, so a loaded machine cannot release early."""
    CLOCK[0] = 0.0
    monkeypatch.setattr(waiting, "utcnow", lambda: at(CLOCK[0]))


def now_signal(monitor: str, **kw):
    """A signal seen now, by the test's clock."""
    return signal(monitor, CLOCK[0], **kw)


def released(t: Triage) -> list[str]:
    CLOCK[0] += WAIT + 0.1
    return [e.type for e in t.process([])]  # the tick's empty batch (``_tick_triage``)


@pytest.mark.parametrize("wait", [WAIT, 0])
def test_a_symptom_first_joins_its_cause_that_came_a_moment_later(db, wait):
    t = triage(db, wait)
    first = [e.type for e in t.process(obs(now_signal("api-0")))]  # nginx's line first
    t.process(obs(now_signal("db")))  # the cause, a moment behind
    if wait:
        assert first == [] and released(t) == ["related"]
    incidents, related = stored(db)
    assert len(incidents) == 1
    root = incidents[0].monitor_id
    if wait:
        assert root == "db" and [r.monitor_id for r in related] == ["api-0"]
    else:  # the old order: the symptom is the root, and the cause's skill no candidate
        assert root == "api-0" and [r.monitor_id for r in related] == ["db"]


def test_the_cause_reopens_its_own_incident_and_the_symptom_joins_it(db):
    t = triage(db)
    t.process(obs(now_signal("db")))
    t.process(obs(now_signal("db", status="ok")))  # healed: resolved
    [old] = stored(db)[0]
    assert old.state == IncidentState.resolved
    t.process(obs(now_signal("api-0")))  # the repeat: the symptom first again
    t.process(obs(now_signal("db")))
    assert released(t) == ["related"]
    incidents, related = stored(db)
    assert [(i.id, i.state, i.reopen_count) for i in incidents] == [(old.id, IncidentState.open, 1)]
    assert [(r.incident_id, r.monitor_id) for r in related] == [(old.id, "api-0")]


def test_a_symptom_whose_cause_never_comes_opens_after_the_wait_and_repeats_fold(db):
    t = triage(db)
    assert t.process(obs(now_signal("api-0"))) == []
    assert t.process(obs(now_signal("api-0"), now_signal("api-0"))) == []
    assert stored(db)[0] == []
    assert released(t) == ["opened"]
    [inc] = stored(db)[0]
    assert inc.monitor_id == "api-0" and inc.count == 3
    t.process(obs(now_signal("api-0")))  # once open, a repeat counts on it at once
    assert stored(db)[0][0].count == 4


def test_a_restart_loses_no_waiting_symptom(db):
    triage(db).process(obs(now_signal("api-0")))
    assert stored(db)[0] == []
    assert released(triage(db)) == ["opened"]  # a new Triage: Guard restarted meanwhile
    assert [i.monitor_id for i in stored(db)[0]] == ["api-0"]
    assert released(triage(db)) == []  # released once


def test_causes_and_deaths_never_wait(db):
    t = triage(db)
    death = now_signal("api-1", kind="container_exited", message="exited with code 1")
    assert [e.type for e in t.process(obs(now_signal("db")))] == ["opened"]  # no dependency
    assert [e.type for e in t.process(obs(death))] == ["related"]  # a death: at once


def test_a_service_whose_dependency_no_monitor_watches_never_waits(db):
    other = Triage(db, TriageSettings(symptom_wait=WAIT))
    other.correlation.services = ServiceMap.of({"api-0": "api-0"}, {"api-0": ["db"]})
    assert [e.type for e in other.process(obs(now_signal("api-0")))] == ["opened"]  # db unwatched


def test_a_single_check_triages_what_waits_at_the_end_of_its_batch(db):
    t = triage(db, wait=600)
    events = t.process(obs(now_signal("api-0"), now_signal("db")), release_all=True)
    assert [e.type for e in events] == ["opened", "related"]
    [inc] = stored(db)[0]
    assert inc.monitor_id == "db"


def test_past_the_cap_a_symptom_does_not_wait():
    waiting = Waiting(60)
    waiting._held = {}
    for n in range(MOST):
        assert waiting.hold(signal("api-0", message=f"line {n}"))
    assert not waiting.hold(signal("api-0", message="one more"))
    assert waiting.hold(signal("api-0", message="line 3"))  # a repeat still folds
    assert len(waiting.due(everything=True)) == MOST
