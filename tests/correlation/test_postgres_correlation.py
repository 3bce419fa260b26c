"""Correlation's queries on a real PostgreSQL server: a database and its dependants' joins,
a passing related check, and a split, as on SQLite."""

from __future__ import annotations

from sqlmodel import select

from guard.config import TriageSettings
from guard.store.correlation import RelatedSignal
from guard.store.db import open_database
from guard.store.models import Incident, IncidentState
from guard.triage import Triage
from guard.triage.split import split
from tests.correlation.helpers import obs, shop_services, signal
from tests.fakes.postgres import fresh_database
from tests.helpers.agent import as_cli


def test_joins_passes_and_splits_on_postgres(postgres_url: str) -> None:
    db = open_database(fresh_database(postgres_url))
    try:
        t = Triage(db, TriageSettings(symptom_wait=0))
        t.correlation.services = shop_services()
        t.process(obs(signal("db", 0), *(signal(f"api-{i}", 1 + i) for i in range(5))))
        t.process(obs(signal("api-0", 10), signal("api-0", 11, status="ok")))
        with db.session() as s:
            (root,) = s.exec(select(Incident)).all()
            related = {r.monitor_id: r for r in s.exec(select(RelatedSignal)).all()}
        assert root.details["service"] == "db" and len(related) == 5
        assert related["api-0"].count == 2 and related["api-0"].status == "ok"
        assert root.id is not None
        done = split(db, root.id, "api-1", **as_cli("ann"))
        t.process(obs(signal("api-1", 20)))
        with db.session() as s:
            new = s.get(Incident, done.incident_id)
            assert new is not None and new.state == IncidentState.open and new.count == 2
    finally:
        db.dispose()
