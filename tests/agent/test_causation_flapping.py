"""A crash loop's container is "running" for a moment after each restart: the one look Guard
takes right before a human's fix may pass between two failures. The fault still holds while
the incident's own signal was seen recently (``Causation.before``), so a real fix of a loop is
learned (the flows test saw it called "not present" in 2 of 9 runs)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any, cast

import pytest

from guard.agent.causation import LOOP_GAP, Causation
from guard.domain.records import utcnow
from guard.store.models import Incident
from tests.conftest import GuardHome
from tests.helpers.agent import stored_incident

pytestmark = pytest.mark.unit


class PassingLook:
    """A verifier whose one look catches the target up (a loop between two restarts)."""

    def __init__(self) -> None:
        self.specs: dict[str, Any] = {}

    async def once(self, incident: Any, quiet: float = 0.0) -> tuple[bool, str]:
        return True, f"container {incident.target} is running"


def before(home: GuardHome, kind: str, seen_ago: float) -> tuple[bool, str]:
    db = home.database()
    with db.session() as session:
        seen = utcnow() - timedelta(seconds=seen_ago)
        inc = stored_incident(session, source="docker", kind=kind, target="api", last_seen=seen)
        session.expunge(inc)
    causation = Causation(db, cast(Any, PassingLook()), settle=10.0)
    evidence = asyncio.run(causation.before(cast(Incident, inc)))
    return evidence.holds, evidence.reason


def test_a_loop_caught_running_between_restarts_still_holds(home: GuardHome) -> None:
    holds, reason = before(home, "container_restarting", 40.0)  # past settle, within the loop
    assert holds and "the check passed at that moment" in reason and "before it" in reason


def test_a_fault_gone_longer_than_it_could_pause_does_not_hold(home: GuardHome) -> None:
    assert before(home, "container_restarting", LOOP_GAP + 30) == (
        False,
        "the fault was not present before it (the check passed: container api is running)",
    )
    holds, _ = before(home, "container_exited", 40.0)  # no loop: only settle counts
    assert not holds
    holds, _ = before(home, "container_exited", 3.0)
    assert holds


class CountingLook(PassingLook):
    """A passing verifier that counts its looks and how long they were told to be quiet."""

    def __init__(self, passes: bool = True) -> None:
        super().__init__()
        self.passes = passes
        self.looks: list[float] = []

    async def once(self, incident: Any, quiet: float = 0.0) -> tuple[bool, str]:
        self.looks.append(quiet)
        return self.passes, f"container {incident.target} is {'running' if self.passes else 'gone'}"


def after(
    home: GuardHome, verdict: str, settle: float, passes: bool = True
) -> tuple[Any, float, list[float]]:
    db = home.database()
    with db.session() as session:
        inc = stored_incident(session, source="docker", kind="container_restarting", target="api")
        session.expunge(inc)
    look = CountingLook(passes)
    causation = Causation(db, cast(Any, look), settle=settle)
    loop = asyncio.new_event_loop()
    try:
        began = loop.time()
        evidence = loop.run_until_complete(causation.after(cast(Incident, inc), verdict))
        return evidence, loop.time() - began, look.looks
    finally:
        loop.close()


def test_a_pass_verification_held_through_settle_is_not_waited_for_twice(home: GuardHome) -> None:
    evidence, took, looks = after(home, "container api is running; stayed up 60s", 60)
    assert not evidence.holds and "held it through agent.settle" in evidence.reason
    assert took < 60 and looks == [0.0]  # one look now, not a second minute
    evidence, took, _ = after(home, "container api is running", 0.3)  # counted at once: waits
    assert not evidence.holds and took >= 0.3
    evidence, _, _ = after(home, "container api is running; stayed up 60s", 60, passes=False)
    assert evidence.holds and "came back as verification ended" in evidence.reason
