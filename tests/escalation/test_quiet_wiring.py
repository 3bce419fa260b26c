"""Quiet hours are wired explicitly: a Guard's wiring builds the wrapper around its agent's
notifier and hands that same wrapper to the leader's release job, so two Guards in one process
each release what they hold (no module-level "installed" wrapper to share or overwrite)."""

from __future__ import annotations

import pytest
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from guard.app import Guard
from guard.notify.quiet import QuietNotifier, release_held
from tests.conftest import GuardHome
from tests.escalation.helpers import Clock
from tests.escalation.test_quiet import MORNING, NIGHT, asks, held, incident
from tests.helpers.telegram import CHAT, TOKEN

QUIET = {"from": "22:00", "to": "08:00", "timezone": "Europe/Madrid", "below": "critical"}


def quiet_guard(home: GuardHome) -> tuple[Guard, QuietNotifier, Clock]:
    """A Guard with quiet hours whose agent is built, its wrapper on a frozen night clock."""
    # Telegram configured (never reached): the agent asks through its outbox rows
    home.write_config({"quiet_hours": QUIET, "telegram": {"bot_token": TOKEN, "chat_id": CHAT}})
    guard = Guard(home.settings(), [])
    agent = guard.agent
    assert isinstance(guard.quiet, QuietNotifier)
    assert agent.notifier is guard.quiet  # the agent asks through the wrapper the job releases
    clock = Clock(NIGHT)
    guard.quiet.clock = clock
    return guard, guard.quiet, clock


async def test_the_scheduled_release_job_releases_through_the_agents_wrapper(
    home: GuardHome,
) -> None:
    guard, quiet, clock = quiet_guard(home)
    req = incident(guard.db, "warning")
    await quiet.ask(req)
    assert asks(guard.db, req.incident_id) == []  # held

    scheduler = AsyncIOScheduler()  # not started: the jobs stay pending, to be looked at
    guard.housekeeping.schedule(scheduler, {})
    job = scheduler.get_job("quiet:release")
    assert job is not None
    clock.now = MORNING
    assert await job.func() == [req.incident_id]
    assert len(asks(guard.db, req.incident_id)) == 1
    assert held(guard.db, req.incident_id).outcome == "asked at the window's end"
    await guard.close()


async def test_two_guards_each_release_their_own_held_questions(
    home: GuardHome, tmp_path_factory: pytest.TempPathFactory
) -> None:
    first, quiet_a, clock_a = quiet_guard(home)
    second, _, _ = quiet_guard(GuardHome(tmp_path_factory.mktemp("second")))
    req = incident(first.db, "warning")
    await quiet_a.ask(req)
    clock_a.now = MORNING
    assert await second.release_held() == []  # the second Guard holds nothing
    assert await first.release_held() == [req.incident_id]
    assert len(asks(first.db, req.incident_id)) == 1
    await first.close()
    await second.close()


async def test_without_quiet_hours_nothing_is_wrapped_and_release_does_nothing(
    home: GuardHome,
) -> None:
    guard = Guard(home.settings(), [])
    agent = guard.agent
    assert guard.quiet is None and not isinstance(agent.notifier, QuietNotifier)
    assert await guard.release_held() == []
    assert await release_held(None) == []
    await guard.close()
