"""Intake: one worker per incident, and an incident that reopens while it works is not lost."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

import pytest

from guard.agent.loop import Agent
from guard.config import Settings
from guard.store.db import open_database
from tests.agent_helpers import stored_incident

pytestmark = pytest.mark.unit


def agent(tmp_path: Path) -> Agent:
    settings = Settings(
        data_dir=tmp_path, skills_dir=tmp_path / "skills", playbooks_dir=tmp_path / "playbooks"
    )
    return Agent(settings, open_database(settings.database_url), [], sandboxes=cast(Any, object()))


async def test_a_reopen_during_work_is_handled_after_it(tmp_path: Path) -> None:
    a = agent(tmp_path)
    calls: list[int] = []
    busy = asyncio.Event()

    async def handle(incident_id: int) -> None:
        calls.append(incident_id)
        if len(calls) == 1:
            await busy.wait()  # the first worker is still busy when the incident reopens

    a.handle = handle  # type: ignore[method-assign]
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
    a.sandboxes = cast(Any, _Closable())
    started: list[int] = []

    async def handle(incident_id: int) -> None:
        started.append(incident_id)
        await asyncio.sleep(60)

    a.handle = handle  # type: ignore[method-assign]
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
    a.recaller.memory = cast(Any, SlowMemory())
    with a.db.session() as s:
        inc = stored_incident(s)
        s.refresh(inc)
        s.expunge(inc)
    recalling = asyncio.create_task(a.recall(inc))
    for _ in range(5):
        await asyncio.sleep(0.01)  # the loop goes on while the search waits
    assert not recalling.done()
    gate.set()
    assert await recalling == []
