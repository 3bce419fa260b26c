"""The Docker monitor on the real engine: events-driven detection, OOM kills, polling."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest
from sqlmodel import select

from guard.app import Guard
from guard.monitors.docker import DockerMonitor
from guard.playbooks.models import DockerMonitorSpec
from guard.store.models import Incident

pytestmark = pytest.mark.docker


def watch_label() -> tuple[str, dict[str, str]]:
    value = uuid.uuid4().hex[:12]
    return f"guard.watch.test={value}", {"guard.watch.test": value}


def docker_playbook(home, label: str, every: str = "1h") -> None:
    home.playbook(
        "containers",
        [{"id": "containers", "type": "docker", "selector": {"label": label}, "every": every}],
    )


async def wait_for_incident(home, predicate, within: float = 20.0) -> Incident:
    db = home.database()
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with db.session() as s:
            for inc in s.exec(select(Incident)).all():
                if predicate(inc):
                    return inc
        await asyncio.sleep(0.02)
    raise AssertionError("no matching incident appeared")


async def running_guard(home) -> tuple[Guard, asyncio.Task[None]]:
    g = Guard(home.settings(), home.playbooks_loaded())
    task = asyncio.create_task(g.run())
    while g.last_batch_at is None:  # the first poll has been stored
        assert not task.done(), task
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.3)  # the events stream is attached
    return g, task


async def test_kill_is_detected_from_the_events_stream(home, containers):
    label, labels = watch_label()
    docker_playbook(home, label, every="1h")  # polling cannot explain a fast detection
    victim = containers.run("victim", "sleep 300", labels=labels)
    g, task = await running_guard(home)
    try:
        killed_at = time.time()
        await asyncio.to_thread(victim.kill)
        inc = await wait_for_incident(home, lambda i: i.kind == "container_exited")
        latency = inc.opened_at.timestamp() - killed_at
        print(f"detection latency: {latency * 1000:.0f} ms")
        assert inc.target == victim.name and inc.source == "docker"
        assert inc.details["exit_code"] == 137
        assert inc.details["event"] == "die"  # it came from the stream, not a poll
        assert not task.done()
    finally:
        g.stop()
        await task


async def test_a_name_selected_monitor_hears_only_its_containers_events(home, containers):
    """The engine ignores a ``name`` filter on its events stream: every container's events
    come; the monitor keeps those of the containers its selector names."""
    watched = containers.run("named-watched", "sleep 300")
    other = containers.run("named-other", "sleep 300")
    home.playbook(
        "containers",
        [{"id": "named", "type": "docker", "selector": {"name": watched.name}, "every": "1h"}],
    )
    g, task = await running_guard(home)
    try:
        await asyncio.to_thread(other.kill)
        await asyncio.sleep(1.0)
        await asyncio.to_thread(watched.kill)
        inc = await wait_for_incident(home, lambda i: i.kind == "container_exited")
        assert inc.target == watched.name and inc.details["event"] == "die"
        with home.database().session() as s:
            targets = {i.target for i in s.exec(select(Incident)).all()}
        assert targets == {watched.name}, targets
    finally:
        g.stop()
        await task


async def test_oom_kill_is_recorded_as_such(home, containers):
    label, labels = watch_label()
    docker_playbook(home, label)
    g, task = await running_guard(home)
    try:
        hog = containers.run(
            "hog",
            "sleep 1; exec dd if=/dev/zero of=/dev/null bs=64M count=1",
            labels=labels,
            mem_limit="8m",
            memswap_limit="8m",
        )
        inc = await wait_for_incident(home, lambda i: i.kind == "container_oom_killed")
        assert inc.target == hog.name
        assert "OOM-killed" in inc.message
        # the ``die`` that follows the ``oom`` event is the same fault, told without asking
        # the engine: it lands on the same incident, and no "exited" incident opens
        inc = await wait_for_incident(
            home, lambda i: i.kind == "container_oom_killed" and i.count >= 2
        )
        db = home.database()
        with db.session() as s:
            kinds = {i.kind for i in s.exec(select(Incident)).all() if i.target == hog.name}
        assert kinds == {"container_oom_killed"}
    finally:
        g.stop()
        await task


async def test_polling_sees_exit_codes_and_failing_health(home, containers):
    label, labels = watch_label()
    docker_playbook(home, label)
    crashed = containers.run("crashed", "exit 3", labels=labels)
    sick = containers.run(
        "sick",
        "sleep 300",
        labels=labels,
        healthcheck={
            "test": ["CMD", "false"],
            "interval": 200_000_000,
            "retries": 1,
            "start_period": 0,
        },
    )
    fine = containers.run("fine", "sleep 300", labels=labels)
    deadline = time.monotonic() + 20
    while sick.reload() or sick.attrs["State"]["Health"]["Status"] != "unhealthy":
        assert time.monotonic() < deadline, "health check never failed"
        await asyncio.sleep(0.2)
    crashed.reload()
    assert crashed.status == "exited"
    await Guard(home.settings(), home.playbooks_loaded()).run_once()
    with home.database().session() as s:
        found = {(i.target, i.kind): i for i in s.exec(select(Incident)).all()}
    assert found[(crashed.name, "container_exited")].details["exit_code"] == 3
    assert (sick.name, "container_unhealthy") in found
    assert not any(target == fine.name for target, _ in found)


def test_classify_restarting_and_paused():
    m = DockerMonitor(
        DockerMonitorSpec.model_validate(
            {"id": "d", "type": "docker", "selector": {"name": "api"}}
        ),
        client=object(),
    )
    restarting: Any = m.classify("api", {"Status": "restarting", "ExitCode": 1, "Restarting": True})
    assert restarting.kind == "container_restarting" and restarting.details["exit_code"] == 1
    paused: Any = m.classify("api", {"Status": "paused"})
    assert paused.kind == "container_paused"
    running: Any = m.classify("api", {"Status": "running", "Health": {"Status": "healthy"}})
    assert running.status == "ok"
    assert m.classify("api", {"Status": "created"}) is None


async def test_one_target_is_told_as_the_whole_check_tells_it(containers):
    """Verification asks about the incident's container alone: the same signal as a check."""
    label, labels = watch_label()
    crashed = containers.run("crashed", "exit 3", labels=labels)
    fine = containers.run("fine", "sleep 300", labels=labels)
    deadline = time.monotonic() + 20
    while crashed.reload() or crashed.status != "exited":
        assert time.monotonic() < deadline, "the container never exited"
        await asyncio.sleep(0.1)
    m = DockerMonitor(
        DockerMonitorSpec.model_validate(
            {"id": "d", "type": "docker", "selector": {"label": label}}
        )
    )
    try:
        whole = {s.target: s for s in (await m.check({})).signals}
        for c in (crashed, fine):
            (alone,) = (await m.check_target(c.name)).signals
            assert (alone.target, alone.kind, alone.status, alone.message) == (
                whole[c.name].target,
                whole[c.name].kind,
                whole[c.name].status,
                whole[c.name].message,
            )
        assert alone.status == "ok" and whole[crashed.name].details["exit_code"] == 3
        assert (await m.check_target(f"{fine.name}-gone")).signals == []
    finally:
        await m.close()


async def test_a_poll_s_signals_are_dated_when_the_engine_was_asked(
    containers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the engine answers may be older than a ``die`` the events stream brought since:
    a poll's signals carry the time it asked, so triage can tell a stale pass (engine.py)."""
    from docker.models.containers import ContainerCollection

    from guard.domain.records import utcnow

    label, labels = watch_label()
    fine = containers.run("fine", "sleep 300", labels=labels)
    m = DockerMonitor(
        DockerMonitorSpec.model_validate(
            {"id": "d", "type": "docker", "selector": {"label": label}}
        )
    )
    listed = ContainerCollection.list
    asked: list[Any] = []

    def slow_list(self: Any, *args: Any, **kwargs: Any) -> Any:
        asked.append(utcnow())
        found = listed(self, *args, **kwargs)
        time.sleep(0.5)  # a loaded machine: the answer is turned into signals later
        return found

    monkeypatch.setattr(ContainerCollection, "list", slow_list)
    try:
        (sig,) = (await m.check({})).signals
        assert sig.target == fine.name and sig.status == "ok"
        assert sig.observed_at <= asked[0]  # when it asked, not when the answer was read
    finally:
        await m.close()
