"""One remedy acts on a target at a time, across incidents: a second incident's remedy waits
for the first's hold to end (noted on its timeline), or is refused after ``WAIT_LIMIT``. The
hold is a row, so it binds every replica on one PostgreSQL as it binds one Guard on SQLite."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import col, select

from guard.agent import holding as holding_module
from guard.agent.holding import Holding
from guard.config import Settings
from guard.incidents.lifecycle import Lifecycle
from guard.skills.model import Step
from guard.store.db import Database, open_database
from guard.store.models import IncidentTimeline, RemediationRun
from tests.fakes.postgres import fresh_database
from tests.helpers.agent import stored_incident


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "sqlite":
        database = open_database(f"sqlite:///{tmp_path / 'g.db'}")
    else:
        database = open_database(fresh_database(request.getfixturevalue("postgres_url")))
    yield database
    database.dispose()


def holding_for(db: Database) -> Holding:
    settings = Settings(agent={"settle": 0})
    return Holding(settings, db, Lifecycle(db), {})


def two_incidents(db: Database, target: str = "api", other: str = "api") -> tuple[Any, Any]:
    with db.session() as session:
        first = stored_incident(session, source="docker", kind="container_exited", target=target)
        second = stored_incident(
            session, source="docker", kind="container_oom_killed", target=other
        )
        session.commit()
        session.refresh(first)
        session.refresh(second)
        session.expunge_all()
    return first, second


def hold(db: Database, inc: Any) -> int:
    """The first incident's remedy starts: its run and its hold, in one transaction."""
    with db.session() as session:
        run = RemediationRun(incident_id=inc.id, skill="restart", target=inc.target)
        session.add(run)
        session.flush()
        step = Step(action="docker.restart", args={"container": "api"})
        holding_for(db).place(session, run, inc, [step])
        session.commit()
        assert run.id is not None
        return run.id


def notes(db: Database, incident_id: int) -> list[str]:
    with db.session() as session:
        return list(
            session.exec(
                select(IncidentTimeline.type)
                .where(IncidentTimeline.incident_id == incident_id)
                .where(col(IncidentTimeline.type).startswith("remedy_"))
                .order_by(col(IncidentTimeline.id))
            ).all()
        )


def test_a_second_incidents_remedy_is_refused_while_the_first_holds_the_target(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(holding_module, "WAIT_LIMIT", 0.3)
    first, second = two_incidents(db)
    hold(db, first)
    # another Guard (a restart, or the next leader) reads the same row
    assert asyncio.run(holding_for(db).free(second)) is False
    assert notes(db, second.id) == ["remedy_waiting", "remedy_refused"]
    assert asyncio.run(holding_for(db).free(first)) is True  # its own hold: no wait


def test_it_waits_for_the_hold_to_end_then_acts(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(holding_module, "POLL", 0.05)
    first, second = two_incidents(db)
    run_id = hold(db, first)

    async def race() -> bool:
        waiting = asyncio.create_task(holding_for(db).free(second))
        await asyncio.sleep(0.3)
        assert not waiting.done()  # still waiting on the first's hold
        holding_for(db).ended(run_id)  # its verification ended; settle 0: the hold is over
        return await asyncio.wait_for(waiting, 10)

    assert asyncio.run(race()) is True
    assert notes(db, second.id) == ["remedy_waiting"]


def test_a_hold_on_another_target_does_not_stop_a_remedy(db: Database) -> None:
    first, second = two_incidents(db, "api", "worker")
    hold(db, first)
    assert asyncio.run(holding_for(db).free(second)) is True
    assert notes(db, second.id) == []
