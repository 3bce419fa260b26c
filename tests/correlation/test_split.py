"""``guard incidents split``: a wrong join undone, through the gate, audited, never redone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import select

from guard.config import TriageSettings
from guard.incidents import transition
from guard.incidents.gate import Actor, Gate, NotAuthorised, Refused
from guard.store.correlation import CorrelationSplit, RelatedSignal
from guard.store.db import Database, open_database
from guard.store.models import AuditEntry, Incident, IncidentState
from guard.triage import Triage
from guard.triage.split import SplitError, split
from tests.conftest import GuardHome
from tests.correlation.helpers import obs, shop_services, signal
from tests.helpers.agent import as_cli


def joined(db: Database) -> tuple[Triage, int]:
    """db's incident with api-0 and api-1 joined to it; returns the triage and its id."""
    t = Triage(db, TriageSettings(flap_window=1, symptom_wait=0))
    t.correlation.services = shop_services(2)
    t.process(obs(signal("db", 0), signal("api-0", 1), signal("api-1", 2)))
    with db.session() as s:
        (root,) = s.exec(select(Incident)).all()
    assert root.id is not None
    return t, root.id


@pytest.fixture
def db(tmp_path: Path):
    database = open_database(f"sqlite:///{tmp_path / 'g.db'}")
    yield database
    database.dispose()


@pytest.mark.unit
def test_a_split_signal_is_its_own_incident_and_the_pair_is_not_joined_again(db):
    t, root_id = joined(db)
    done = split(db, root_id, "api-0", **as_cli("ann"))
    with db.session() as s:
        new = s.get(Incident, done.incident_id)
        assert new is not None and new.monitor_id == "api-0" and new.state == IncidentState.open
        assert new.count == 1 and new.details["service"] == "api-0"
        left = s.exec(select(RelatedSignal)).all()
        assert [r.monitor_id for r in left] == ["api-1"]
        (memo,) = s.exec(select(CorrelationSplit)).all()
        assert (memo.root_monitor, memo.monitor_id, memo.by) == ("db", "api-0", "cli:ann")
        audited = s.exec(select(AuditEntry).where(AuditEntry.action == "incident.split")).all()
        assert len(audited) == 1 and audited[0].actor == "cli:ann"
    t.process(obs(signal("api-0", 3)))  # counts on its own incident now
    with db.session() as s:
        new = s.get(Incident, done.incident_id)
        assert new is not None and new.count == 2
        transition(s, new, IncidentState.resolved, actor="test", reason="healed")
    t.process(obs(signal("api-0", 60)))  # fires again later, the root still open:
    with db.session() as s:  # its own incident again (reopened or new), never the root's
        assert [r.monitor_id for r in s.exec(select(RelatedSignal)).all()] == ["api-1"]
        mine = s.exec(select(Incident).where(Incident.monitor_id == "api-0")).all()
        assert IncidentState.open in [i.state for i in mine]


@pytest.mark.unit
def test_a_split_names_what_it_cannot_find_and_a_refusal_changes_nothing(db):
    _, root_id = joined(db)
    with pytest.raises(SplitError, match=r"incident \d+ has no related signal 'nope' \(related: "):
        split(db, root_id, "nope", **as_cli("ann"))
    gate = Gate([lambda_policy()])
    with pytest.raises(NotAuthorised, match="viewers may not split"):
        split(db, root_id, "api-0", actor=Actor("telegram", "7"), gate=gate)
    with db.session() as s:
        assert len(s.exec(select(RelatedSignal)).all()) == 2
        refused = s.exec(select(AuditEntry).where(AuditEntry.action == "human.refused")).all()
        assert refused[0].data["verb"] == "split"


class lambda_policy:
    def decide(self, actor, verb, incident):
        return Refused(f"viewers may not {verb}")


def test_guard_incidents_show_and_split_as_a_user_runs_them(home: GuardHome):
    _, root_id = joined(home.database())
    shown = json.loads(home.cli("incidents", "show", str(root_id), "--json").stdout)
    related = shown["related"]
    assert [r["monitor"] for r in related] == ["api-0", "api-1"]
    assert {"monitor", "kind", "target", "count", "first_seen", "last_seen"} <= set(related[0])
    assert related[0]["target"] == "http://api-0/" and related[0]["count"] == 1
    human = home.cli("incidents", "show", str(root_id)).stdout
    assert "related:     2 signal(s) joined this incident" in human
    assert f"#{related[1]['id']} http_status on http://api-1/ (monitor api-1, x1, firing)" in human
    out = home.cli("incidents", "split", str(root_id), str(related[1]["id"])).stdout
    assert (
        f"split http status on http://api-1/ (x1) off incident #{root_id}: it is incident #" in out
    )
    after = json.loads(home.cli("incidents", "show", str(root_id), "--json").stdout)
    assert [r["monitor"] for r in after["related"]] == ["api-0"]
    assert after["timeline"][-1]["type"] == "split"
    missing = home.cli("incidents", "split", str(root_id), "api-1", check=False)
    assert missing.returncode == 1 and "has no related signal 'api-1'" in missing.stderr


def two_lines_joined(db: Database) -> tuple[Triage, int]:
    """db's incident joined by api-0's HTTP check and two different lines of api-1's log."""
    t = Triage(db, TriageSettings(flap_window=1, symptom_wait=0))
    t.correlation.services = shop_services(2)
    log = {"source": "logfile", "target": "/var/log/api-1.log"}
    t.process(
        obs(
            signal("db", 0),
            signal("api-0", 1),
            signal("api-1", 2, kind="upstream_refused", message="upstream refused", **log),
            signal("api-1", 3, kind="bad_gateway", message="request failed: 502", **log),
        )
    )
    with db.session() as s:
        (root,) = s.exec(select(Incident)).all()
        assert len(s.exec(select(RelatedSignal)).all()) == 3  # stored: one row per signal
    assert root.id is not None
    return t, root.id


def test_one_monitor_on_one_target_is_one_related_signal(home: GuardHome):
    """Three monitors, one fault: the incident shows two related signals, the log's two
    different lines being one of them (its kinds, summed count, first and last seen)."""
    _, root_id = two_lines_joined(home.database())
    shown = json.loads(home.cli("incidents", "show", str(root_id), "--json").stdout)
    related = shown["related"]
    assert [r["monitor"] for r in related] == ["api-0", "api-1"]
    log = related[1]
    assert log["kinds"] == ["upstream_refused", "bad_gateway"] and log["kind"] == "upstream_refused"
    assert log["count"] == 2 and len(log["ids"]) == 2 and log["id"] == log["ids"][0]
    assert log["first_seen"] < log["last_seen"] and log["message"] == "request failed: 502"
    human = home.cli("incidents", "show", str(root_id)).stdout
    assert "related:     2 signal(s) joined this incident" in human
    assert "upstream_refused, bad_gateway on /var/log/api-1.log (monitor api-1, x2" in human


@pytest.mark.unit
def test_a_related_signal_of_several_rows_is_split_whole(db):
    _, root_id = two_lines_joined(db)
    with db.session() as s:
        second = s.exec(select(RelatedSignal).where(RelatedSignal.kind == "bad_gateway")).one()
    done = split(db, root_id, str(second.id), **as_cli("ann"))  # any of its rows names it
    assert done.signal == "upstream refused, bad gateway on /var/log/api-1.log (x2)"
    assert len(done.incident_ids) == 2 and done.incident_id == done.incident_ids[0]
    with db.session() as s:
        made = [s.get(Incident, i) for i in done.incident_ids]
        assert [(i.kind, i.count) for i in made if i] == [
            ("upstream_refused", 1),
            ("bad_gateway", 1),
        ]
        assert [r.monitor_id for r in s.exec(select(RelatedSignal)).all()] == ["api-0"]
        assert len(s.exec(select(CorrelationSplit)).all()) == 2  # each line's pair remembered
    with pytest.raises(SplitError, match="no related signal 'api-1'"):
        split(db, root_id, "api-1", **as_cli("ann"))


@pytest.mark.unit
def test_the_question_names_one_related_signal_per_monitor_and_target(db):
    from guard.notify.relatedline import related_line
    from guard.triage.correlation import related_of

    _, root_id = two_lines_joined(db)
    with db.session() as s:
        line = related_line(related_of(s, root_id))
    assert line == (
        "Related signals (2): http status on http://api-0/ (x1); "
        "upstream refused, bad gateway on /var/log/api-1.log (x2)"
    )
