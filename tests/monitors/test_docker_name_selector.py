"""A docker monitor that selects by name follows only those containers' events: the engine's
events API has no name filter (it ignores one), so another container's exit, on the same
engine, is no incident of this monitor."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlmodel import select

from guard.store.models import Incident
from guard.util.rollback_names import rollback_aside
from tests.monitors.test_docker_monitor import running_guard, wait_for_incident

pytestmark = pytest.mark.docker


async def test_a_name_selector_sees_only_its_containers_exits(home: Any, containers: Any) -> None:
    watched = f"{containers.prefix}-watched"
    monitor = {"id": "named", "type": "docker", "selector": {"name": watched}, "every": "1h"}
    home.playbook("named", [monitor])
    mine = containers.run("watched", "sleep 300")
    other = containers.run("other", "sleep 300")
    g, task = await running_guard(home)
    try:
        await asyncio.to_thread(other.kill)
        await asyncio.sleep(1)
        await asyncio.to_thread(mine.kill)
        inc = await wait_for_incident(home, lambda i: i.kind == "container_exited")
        assert inc.target == mine.name and inc.details["event"] == "die"
        with home.database().session() as s:
            targets = {i.target for i in s.exec(select(Incident)).all()}
        assert targets == {mine.name}, targets
    finally:
        g.stop()
        await task


async def test_the_container_a_rollback_put_aside_opens_no_incident(
    home: Any, containers: Any
) -> None:
    """``docker.rollback`` renames the old container aside and stops it: that ``die`` is Guard's
    own doing, not a fault of a watched container (its name still holds the watched name)."""
    watched = f"{containers.prefix}-web"
    monitor = {"id": "named", "type": "docker", "selector": {"name": watched}, "every": "1h"}
    home.playbook("named", [monitor])
    old = containers.run("web", "sleep 300")
    g, task = await running_guard(home)
    try:
        await asyncio.to_thread(old.rename, rollback_aside(watched))
        await asyncio.to_thread(old.stop, timeout=1)
        after = containers.run("web-after", "sleep 300")  # then a real fault, to know it listens
        await asyncio.to_thread(after.kill)
        inc = await wait_for_incident(home, lambda i: i.kind == "container_exited")
        assert inc.target == after.name
        with home.database().session() as s:
            targets = {i.target for i in s.exec(select(Incident)).all()}
        assert targets == {after.name}, targets
    finally:
        g.stop()
        await task
