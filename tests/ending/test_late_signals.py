"""A line written during a silence or a mute stays hushed however late triage lands it
(``triage.symptom_wait`` holds a dependant's line for seconds): the agent and ``quiet.wake``
judge by when the signal was seen, not by when they get to it. A human's unmute is judged by
now."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import pytest

from guard.agent.loop import Agent
from guard.app.compose import compose_agent
from guard.config import Settings
from guard.domain.records import IncidentEvent, utcnow
from guard.store.db import open_database
from guard.store.models import Incident, IncidentState
from guard.store.silences import Silence
from guard.triage import quiet
from tests.helpers.agent import stored_incident

pytestmark = pytest.mark.unit

LOG = {"kind": "payment_error", "details": {"service": "app"}}


def agent(tmp_path: Path) -> Agent:
    settings = Settings(
        data_dir=tmp_path, skills_dir=tmp_path / "skills", playbooks_dir=tmp_path / "playbooks"
    )
    return compose_agent(
        settings, open_database(settings.database_url), [], sandboxes=cast(Any, Released())
    )


class Released:
    """The sandboxes: a hushed incident's warm one is released (none is ever started)."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    async def release(self, key: str) -> None:
        self.keys.append(key)


def silenced_then_expired(a: Agent) -> int:
    """An open incident whose last line came at second 8 of a 12 s silence that ended 2 s ago
    (the agent takes it only now)."""
    now = utcnow()
    with a.db.session() as session:
        session.add(
            Silence(
                matchers=[
                    {"name": "service", "op": "=", "value": "app"},
                    {"name": "kind", "op": "=", "value": "payment_error"},
                ],
                expires_at=now - timedelta(seconds=2),
                by="cli:root",
                created_at=now - timedelta(seconds=14),
            )
        )
        inc = stored_incident(session, "open", at=now - timedelta(seconds=6), **LOG)
        return int(inc.id)


def asked_on(a: Agent) -> list[int]:
    asked: list[int] = []

    async def decide(inc: Incident) -> None:
        asked.append(int(inc.id or 0))

    a.handler.decide = decide  # type: ignore[method-assign]
    return asked


async def test_a_line_seen_during_a_silence_that_ended_before_the_agent_took_it_asks_nobody(
    tmp_path: Path,
) -> None:
    a = agent(tmp_path)
    inc_id = silenced_then_expired(a)
    asked = asked_on(a)
    await a.handler.handle(inc_id)
    assert asked == []
    inc = a.lifecycle.load(inc_id)
    assert inc is not None and inc.state == IncidentState.muted
    assert inc.details["silenced"]["silence"] == 1


async def test_an_unmute_asks_about_a_line_whose_silence_has_ended(tmp_path: Path) -> None:
    a = agent(tmp_path)
    inc_id = silenced_then_expired(a)
    asked = asked_on(a)
    await a.handler.handle(inc_id, unmuted=True)
    assert asked == [inc_id]


def muted_until(session: Any, seconds_ago: float) -> Incident:
    until = utcnow() - timedelta(seconds=seconds_ago)
    details = {"service": "app", "muted_until": until.isoformat(), "silenced": {"silence": 1}}
    return cast(Incident, stored_incident(session, "muted", kind="payment_error", details=details))


@pytest.mark.parametrize(
    ("seen_ago", "wakes"),
    [(4.0, False), (1.0, True)],
    ids=["seen-while-silenced", "seen-after-the-silence"],
)
def test_a_muted_incident_wakes_only_for_a_signal_seen_after_its_silence(
    tmp_path: Path, seen_ago: float, wakes: bool
) -> None:
    db = open_database(f"sqlite:///{tmp_path / 'guard.db'}")
    events: list[IncidentEvent] = []
    with db.session() as session:
        inc = muted_until(session, seconds_ago=2.0)
        quiet.wake(session, inc, events, utcnow() - timedelta(seconds=seen_ago))
        assert (inc.state == IncidentState.open) is wakes
        assert [e.type for e in events] == (["reopened"] if wakes else [])
        assert ("silenced" in inc.details) is not wakes
