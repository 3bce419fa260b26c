"""Intake: one worker per incident, and an incident that reopens while it works is not lost."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

import pytest

from guard.agent.loop import Agent
from guard.app.compose import compose_agent
from guard.config import Settings
from guard.store.db import open_database
from tests.helpers.agent import stored_incident

pytestmark = pytest.mark.unit


def agent(tmp_path: Path) -> Agent:
    settings = Settings(
        data_dir=tmp_path, skills_dir=tmp_path / "skills", playbooks_dir=tmp_path / "playbooks"
    )
    return compose_agent(
        settings, open_database(settings.database_url), [], sandboxes=cast(Any, object())
    )


async def test_a_reopen_during_work_is_handled_after_it(tmp_path: Path) -> None:
    a = agent(tmp_path)
    calls: list[int] = []
    busy = asyncio.Event()

    async def handle(incident_id: int) -> None:
        calls.append(incident_id)
        if len(calls) == 1:
            await busy.wait()  # the first worker is still busy when the incident reopens

    a.handler.handle = handle  # type: ignore[method-assign,assignment]
    a.submit(7)
    await asyncio.sleep(0)
    a.submit(7)  # reopened while the worker runs: not a second worker, not dropped either
    a.submit(7)  # several reopens are one more look
    await asyncio.sleep(0)
    assert calls == [7]
    busy.set()
    await a.drain()
    assert calls == [7, 7]


async def test_nothing_new_starts_while_shutting_down(tmp_path: Path) -> None:
    a = agent(tmp_path)
    a.parts.sandboxes = cast(Any, _Closable())
    started: list[int] = []

    async def handle(incident_id: int) -> None:
        started.append(incident_id)
        await asyncio.sleep(60)

    a.handler.handle = handle  # type: ignore[method-assign,assignment]
    a.submit(1)
    await asyncio.sleep(0)
    a.submit(1)  # queued for another look...
    await a.shutdown()  # ...which shutdown cancels instead of starting
    assert started == [1]
    assert all(t.done() for t in a.workers.tasks())


class _Closable:
    async def close(self) -> None:
        pass

    async def release(self, key: str) -> None:
        pass


async def test_a_slow_memory_does_not_stall_the_event_loop(tmp_path: Path) -> None:
    """Recall asks the memory helper, which may be starting or stuck: never on the loop."""
    import threading

    gate = threading.Event()

    class SlowMemory:
        def warm(self) -> None: ...
        def close(self) -> None: ...
        def remember(self, incident: object, *, resolution: str, skill: str = "") -> None: ...

        def search(self, text: str, limit: int = 5) -> list[object]:
            gate.wait(10)
            return []

    a = agent(tmp_path)
    a.parts.recaller.memory = cast(Any, SlowMemory())
    with a.db.session() as s:
        inc = stored_incident(s)
        s.refresh(inc)
        s.expunge(inc)
    recalling = asyncio.create_task(a.handler.recall(inc))
    for _ in range(5):
        await asyncio.sleep(0.01)  # the loop goes on while the search waits
    assert not recalling.done()
    gate.set()
    assert await recalling == []


async def test_an_incident_whose_hand_off_was_lost_is_taken_by_the_sweep(tmp_path: Path) -> None:
    """Triage opened it, but the hand-off to the agent died (the store locked, the disk full):
    the sweep takes an incident left open, and only one that has been open a while and that
    no worker holds."""
    from datetime import timedelta

    from guard.domain.records import utcnow

    a = agent(tmp_path)
    with a.db.session() as session:
        stranded = stored_incident(session)
        stranded.opened_at = utcnow() - timedelta(minutes=5)
        fresh = stored_incident(session)  # just opened: its hand-off may still be on its way
        held = stored_incident(session)
        held.opened_at = utcnow() - timedelta(minutes=5)
        taken = stored_incident(session, "awaiting_human")
        taken.opened_at = utcnow() - timedelta(minutes=5)
        ids = (stranded.id, fresh.id, held.id, taken.id)
    looked: list[int] = []
    release = asyncio.Event()

    async def handle(incident_id: int) -> None:
        looked.append(incident_id)
        await release.wait()

    a.handler.handle = handle  # type: ignore[method-assign,assignment]
    a.submit(ids[2])  # a worker holds it already
    await asyncio.sleep(0)
    await a.sweep()
    await asyncio.sleep(0)
    assert looked == [ids[2], ids[0]]
    release.set()
    await a.drain()


async def test_an_incident_a_failed_worker_left_working_is_resumed_by_the_sweep(
    tmp_path: Path,
) -> None:
    """A worker that died mid-way (its escalation refused by a full disk) left its incident
    ``diagnosing`` for good: nothing but a restart picked it up. The sweep resumes such an
    incident as a restart would (a looked-at diagnosis again, a run resumed, a finished run
    settled), only once it has not moved for a while, and gives up after a few tries."""
    from datetime import timedelta

    from guard.agent import loop
    from guard.domain.records import utcnow
    from guard.store.models import RemediationRun

    a = agent(tmp_path)
    old = utcnow() - timedelta(minutes=5)
    with a.db.session() as session:
        diagnosing = stored_incident(session, "diagnosing")
        running = stored_incident(session, "remediating")
        ended = stored_incident(session, "remediating")
        moving = stored_incident(session, "diagnosing")  # its worker may be about to move it
        for inc in (diagnosing, running, ended):
            inc.opened_at = old
        run = RemediationRun(incident_id=running.id, skill="restart", target="t")
        session.add(run)
        session.flush()
        ids = (diagnosing.id, running.id, ended.id, moving.id, run.id)
    done: list[tuple[str, int]] = []

    async def handle(incident_id: int) -> None:
        done.append(("look", incident_id))

    async def resume_run(r: RemediationRun) -> None:
        done.append(("resume run", r.id or 0))

    async def settle_run(incident_id: int) -> None:
        done.append(("settle", incident_id))

    a.handler.handle = handle  # type: ignore[method-assign,assignment]
    a.recovery._resume_run = resume_run  # type: ignore[method-assign,assignment]
    a.recovery._settle_run = settle_run  # type: ignore[method-assign]
    await a.sweep()
    await a.drain()
    assert sorted(done) == sorted([("look", ids[0]), ("resume run", ids[4]), ("settle", ids[2])])
    for _ in range(loop.SWEEP_RETRIES + 2):
        await a.sweep()
        await a.drain()
    assert done.count(("look", ids[0])) == loop.SWEEP_RETRIES  # then left for a human


async def test_a_worker_that_raises_is_logged_not_silent(tmp_path: Path) -> None:
    from loguru import logger

    a = agent(tmp_path)
    seen: list[str] = []
    sink = logger.add(lambda m: seen.append(str(m)), level="ERROR")

    async def handle(incident_id: int) -> None:
        raise RuntimeError("database is locked")

    a.handler.handle = handle  # type: ignore[method-assign,assignment]
    try:
        a.submit(3)
        await a.drain()
        await asyncio.sleep(0)
    finally:
        logger.remove(sink)
    assert any("incident #3: its worker failed" in m and "database is locked" in m for m in seen)


@pytest.mark.parametrize(("state", "escalated"), [("resolved", False), ("open", True)])
async def test_an_incident_that_recovered_before_the_agent_took_it_is_not_escalated(
    tmp_path: Path, state: str, escalated: bool
) -> None:
    """The check passed again between the open and the agent's move to diagnosing: the move
    is refused (resolved -> diagnosing) and that is the end of it, not an "agent failed"."""
    from guard.domain.exceptions import InvalidTransition

    a = agent(tmp_path)
    with a.db.session() as session:
        inc = stored_incident(session, state)
    asked: list[int] = []

    async def decide(_inc: Any) -> None:
        raise InvalidTransition(f"incident {inc.id} cannot go from {state} to diagnosing")

    async def ask(incident_id: int, *args: Any, **kw: Any) -> None:
        asked.append(incident_id)

    a.handler.decide = decide  # type: ignore[method-assign,assignment]
    a.parts.asker.ask = ask  # type: ignore[method-assign]
    await a.handler.decide_or_escalate(inc)
    assert asked == ([inc.id] if escalated else [])


async def test_a_store_error_skips_a_round_of_the_agent_loop_and_does_not_end_it(
    tmp_path: Path,
) -> None:
    """The loop that takes human commands and sweeps untaken incidents outlives a "database
    is locked": before, the error ended it, and no command was taken until a restart."""
    from sqlalchemy.exc import OperationalError

    a = agent(tmp_path)
    a.settings.agent.poll_interval = 0.02
    a.parts.sandboxes = cast(Any, _Closable())
    rounds: list[int] = []
    stop = asyncio.Event()

    async def poll_commands() -> None:
        rounds.append(len(rounds))
        if len(rounds) == 1:
            raise OperationalError("BEGIN IMMEDIATE", {}, Exception("database is locked"))
        if len(rounds) == 3:
            stop.set()

    a.poll_commands = poll_commands  # type: ignore[method-assign]
    await asyncio.wait_for(a.run(stop), 30)
    assert rounds == [0, 1, 2]
