"""A ``die`` on the events stream, on the real engine: the restart policy decides whether it is
an exit or a crash loop, and a policy the monitor already knows is not asked again (an
``inspect`` per ``die`` was most of Guard's part of the detection latency, issue 48); a policy
changed since (``docker update``) is asked again."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from typing import Any

import docker
import pytest

from guard.domain.records import Observation, Signal
from guard.monitors.docker import DockerMonitor
from guard.monitors.docker_restarts import KnownPolicies
from guard.playbooks.models import DockerMonitorSpec

pytestmark = pytest.mark.docker
UNTIL_TOLD = "while [ ! -f /tmp/go ]; do sleep 0.1; done; exit 3"  # exits when told (a crash)


class CountingInspects:
    """A real SDK client whose ``inspect_container`` calls are counted (the engine answers)."""

    def __init__(self) -> None:
        self.client = docker.from_env()
        self.inspects = 0
        real = self.client.api.inspect_container

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.inspects += 1
            return real(*args, **kwargs)

        self.client.api.inspect_container = counted


async def _follow_until(m: DockerMonitor, act: Any, kind: str, target: str) -> Signal:
    """Follow ``m``'s events, run ``act`` once the stream is attached, and return the first
    signal of ``kind`` about ``target``."""
    found: asyncio.Queue[Signal] = asyncio.Queue()

    async def emit(obs: Observation) -> None:
        for s in obs.signals:
            found.put_nowait(s)

    task = asyncio.create_task(m.follow(emit))
    try:
        await asyncio.sleep(0.5)  # attached
        await asyncio.to_thread(act)
        deadline = time.monotonic() + 20
        while True:
            s = await asyncio.wait_for(found.get(), max(0.1, deadline - time.monotonic()))
            if s.kind == kind and s.target == target:
                return s
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _monitor(label: str, counting: CountingInspects) -> DockerMonitor:
    spec = DockerMonitorSpec.model_validate(
        {"id": "d", "type": "docker", "selector": {"label": label}, "every": "1h"}
    )
    return DockerMonitor(spec, client=counting.client)


async def test_a_die_of_a_container_without_a_restart_policy_is_told_without_an_inspect(
    containers: Any,
) -> None:
    value = uuid.uuid4().hex[:12]
    victim = containers.run("plain", "sleep 300", labels={"guard.policy.test": value})
    counting = CountingInspects()
    m = _monitor(f"guard.policy.test={value}", counting)
    try:
        await m.check({})  # the poll learns each container's policy
        before = counting.inspects
        sig = await _follow_until(m, victim.kill, "container_exited", victim.name)
        assert sig.details["exit_code"] == 137 and sig.details["event"] == "die"
        assert counting.inspects == before, "the die cost an inspect"
    finally:
        await m.close()


async def test_a_policy_changed_since_the_poll_is_asked_again(containers: Any) -> None:
    """``docker update --restart always`` after the poll: the crash is a crash loop's."""
    value = uuid.uuid4().hex[:12]
    victim = containers.run("updated", UNTIL_TOLD, labels={"guard.policy.test": value})
    counting = CountingInspects()
    m = _monitor(f"guard.policy.test={value}", counting)
    try:
        await m.check({})

        def update_then_crash() -> None:
            victim.update(restart_policy={"Name": "always"})
            time.sleep(0.3)  # the engine's ``update`` event reaches the stream first
            victim.exec_run(["touch", "/tmp/go"])

        sig = await _follow_until(m, update_then_crash, "container_restarting", victim.name)
        assert sig.details["event"] == "die"
    finally:
        await m.close()


async def test_a_container_first_seen_on_the_stream_is_asked(containers: Any) -> None:
    """Started after the poll, with a restart policy: its first ``die`` asks the engine."""
    value = uuid.uuid4().hex[:12]
    counting = CountingInspects()
    m = _monitor(f"guard.policy.test={value}", counting)
    try:
        await m.check({})
        started: list[Any] = []

        def start_then_crash() -> None:
            started.append(
                containers.run(
                    "late",
                    UNTIL_TOLD,
                    labels={"guard.policy.test": value},
                    restart_policy={"Name": "always"},
                )
            )
            time.sleep(0.3)
            started[0].exec_run(["touch", "/tmp/go"])

        name = f"{containers.prefix}-late"
        sig = await _follow_until(m, start_then_crash, "container_restarting", name)
        assert sig.details["event"] == "die"
    finally:
        await m.close()


def test_known_policies_say_never_only_for_no_and_forget_on_update() -> None:
    known = KnownPolicies()
    assert not known.never_restarts("a")  # unknown: ask
    known.learn("a", {"HostConfig": {"RestartPolicy": {"Name": "no"}}})
    known.learn("b", {"HostConfig": {"RestartPolicy": {"Name": "on-failure"}}})
    known.learn("c", {"HostConfig": {"RestartPolicy": {"Name": ""}}})  # the engine's "no"
    assert known.never_restarts("a") and known.never_restarts("c")
    assert not known.never_restarts("b")
    known.event({"Action": "update", "id": "a"})
    assert not known.never_restarts("a")
    known.event({"Action": "destroy", "id": "c"})
    assert not known.never_restarts("c")
