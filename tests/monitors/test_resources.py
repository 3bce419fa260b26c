"""``type: resources``: thresholds held for cycles, and trends that see exhaustion coming.

Against real things: a python3 process leaking 2 MB/s in a container under a 64 MiB limit (the
stack image) is an incident with a predicted time to the limit before the kernel OOM-kills it;
a size-limited tmpfs mounted on this host, filled at a steady rate by a container, is one
before it is full. The judging is also tested on given samples, and the playbook shape's
refusals by their messages."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from guard.domain.records import Signal
from guard.monitors.resources import ResourcesMonitor
from guard.monitors.usage import Reading, Sample, host_sample
from guard.playbooks.models import Playbook, ResourcesMonitorSpec
from tests.helpers.tmpfs import mounted_tmpfs

MiB = 2**20


def spec(**fields: Any) -> ResourcesMonitorSpec:
    entry = {"id": "app-resources", "type": "resources", "every": "1s", **fields}
    [parsed] = Playbook.model_validate({"name": "t", "monitors": [entry]}).monitors
    assert isinstance(parsed, ResourcesMonitorSpec)
    return parsed


def memory(used_mib: float, limit_mib: float = 512) -> Sample:
    return Sample("app", {"memory": Reading(used_mib * MiB, limit_mib * MiB, "B")})


def firing(signals: list[Signal]) -> list[Signal]:
    return [s for s in signals if s.status == "firing"]


@pytest.mark.unit
def test_the_playbook_shape_is_the_issue_s_and_refusals_name_the_fix() -> None:
    parsed = spec(
        selector={"name": "app"},
        memory={"above": "90%", "for": 3},
        trend={"window": "10m", "within": "30m"},
    )
    assert parsed.memory is not None and (parsed.memory.above, parsed.memory.for_count) == (90, 3)
    assert parsed.trend is not None and (parsed.trend.window, parsed.trend.within) == (600, 1800)
    assert spec(host="local", mounts=["/data"], disk={"above": "80%"}).mounts == ["/data"]
    refused: dict[str, dict[str, Any]] = {
        "host: db1 needs the hosts: section (not yet available)": {
            "host": "db1",
            "memory": {"above": 90},
        },
        "give one of selector: (containers), pods: (Kubernetes) or host: local": {
            "memory": {"above": 90}
        },
        "disk: and inodes: need mounts:": {"host": "local", "disk": {"above": 90}},
        "disk is not watched with selector: (it has memory, cpu, pids)": {
            "selector": {"name": "app"},
            "disk": {"above": 90},
        },
        "nothing to watch": {"selector": {"name": "app"}},
        "not a level (write e.g. `above: 90%`)": {"host": "local", "memory": {"above": "lots"}},
    }
    for message, fields in refused.items():
        with pytest.raises(ValidationError, match=re.escape(message)):
            spec(**fields)


@pytest.mark.unit
def test_a_level_fires_only_when_held_for_its_cycles_and_clears_with_an_ok() -> None:
    monitor = ResourcesMonitor(spec(selector={"name": "app"}, memory={"above": "90%", "for": 3}))
    assert firing(monitor.judge([memory(480)], 0.0)) == []
    assert firing(monitor.judge([memory(480)], 1.0)) == []
    [fired] = firing(monitor.judge([memory(480)], 2.0))
    assert (fired.kind, fired.target, fired.source) == ("memory_high", "app", "resources")
    assert fired.message == "memory 480 MiB of 512 MiB (94 %): above 90 % on 3 checks"
    [ok] = monitor.judge([memory(100)], 3.0)
    assert (ok.status, ok.kind, ok.message) == (
        "ok",
        "resources_ok",
        "memory 100 MiB of 512 MiB (20 %)",
    )
    assert firing(monitor.judge([memory(480)], 4.0)) == []  # the count started again
    assert monitor.judge([Sample("app")], 4.5) == []  # stopped between the list and its stats
    # verification asks about the level now, without waiting for cycles
    assert firing(monitor.judge([memory(480)], 5.0, hold=False))


@pytest.mark.unit
def test_a_rise_is_an_incident_with_its_prediction_long_before_the_limit() -> None:
    monitor = ResourcesMonitor(
        spec(selector={"name": "app"}, trend={"window": "10m", "within": "30m"})
    )
    signals: list[Signal] = []
    for i in range(10):  # 2 MB/s, a check every 15 s, from 100 MiB: not yet a quarter window
        signals = monitor.judge([memory(100 + 2e6 * 15 * i / MiB, 1024)], 15.0 * i)
        assert firing(signals) == []
    [fired] = firing(monitor.judge([memory(100 + 2e6 * 150 / MiB, 1024)], 150.0))
    assert fired.kind == "memory_high"
    assert fired.message == (
        "memory 386 MiB of 1024 MiB (38 %), rising 2.0 MB/s: reaches the limit in 6 min"
    )
    assert fired.details["predicted_in_s"] == 334
    flat = ResourcesMonitor(
        spec(selector={"name": "app"}, trend={"window": "10m", "within": "30m"})
    )
    for i in range(10):
        assert firing(flat.judge([memory(300)], 15.0 * i)) == []


@pytest.mark.unit
def test_the_local_host_reads_memory_load_open_files_and_each_mount(tmp_path: Path) -> None:
    [host, mount, missing] = host_sample(["/", str(tmp_path / "absent")])
    assert host.target == "local" and 0 < host.readings["memory"].percent < 100
    assert len(host.facts["load"]) == 3 and host.facts["max_open_files"] > 0
    assert mount.target == "local:/" and mount.readings["disk"].limit > 0
    assert mount.readings["inodes"].used > 0
    assert missing.readings == {} and "No such file" in missing.facts["error"]
    monitor = ResourcesMonitor(
        spec(host="local", mounts=[str(tmp_path / "absent")], disk={"above": 99})
    )
    signals = monitor.judge([missing], 0.0)
    assert [(s.kind, s.status) for s in signals] == [("mount_error", "firing")]


# -- against real daemons -------------------------------------------------------------------


async def check_until_fired(monitor: ResourcesMonitor, kind: str, within: float) -> Signal:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        obs = await monitor.check({})
        fired = [s for s in firing(obs.signals) if s.kind == kind]
        if fired:
            return fired[0]
        await asyncio.sleep(1.0)
    raise AssertionError(f"no {kind} within {within:g}s")


@pytest.fixture
def stack(docker_client: Any) -> Iterator[Any]:
    """Start containers of the stack image (python3, coreutils; built offline, and built
    already on a machine that ran the flows), each removed afterwards."""
    from tests.flows.image import ensure_stack_image

    image = ensure_stack_image(docker_client)
    started: list[Any] = []

    def run(name: str, argv: list[str], **kwargs: Any) -> Any:
        c = docker_client.containers.run(
            image,
            argv,
            name=f"guard-test-{os.getpid()}-{name}",
            detach=True,
            network_mode="none",
            labels={"guard.test": "1", **kwargs.pop("labels", {})},
            **kwargs,
        )
        started.append(c)
        return c

    yield run
    for c in started:
        with contextlib.suppress(Exception):
            c.remove(force=True)


LEAK = (
    "import time\n"
    "held = []\n"
    "while True:\n"
    "    held.append(b'x' * 200_000)  # touched pages: 2 MB/s\n"
    "    time.sleep(0.1)\n"
)


@pytest.mark.docker
async def test_a_leaking_container_is_an_incident_before_the_oom_kill(stack: Any) -> None:
    leak = stack("leak", ["python3", "-c", LEAK], mem_limit="64m", memswap_limit="64m")
    name = leak.name
    monitor = ResourcesMonitor(
        spec(
            selector={"name": name},
            memory={"above": "95%"},
            trend={"window": "20s", "within": "10m"},
        )
    )
    try:
        started = time.monotonic()
        fired = await check_until_fired(monitor, "memory_high", within=40)
        predicted_at = time.monotonic() - started
        leak.reload()
        assert leak.status == "running", "the prediction came after the kill"
        assert "rising" in fired.message and "reaches the limit in" in fired.message, fired.message
        assert fired.details["percent"] < 95  # the trend, not the level, fired
        assert 1.0e6 < fired.details["rate_per_s"] < 3.0e6
        predicted = fired.details["predicted_in_s"]
        while leak.status == "running" and time.monotonic() - started < 90:
            await asyncio.sleep(0.5)
            leak.reload()
        assert leak.attrs["State"]["OOMKilled"], leak.attrs["State"]
        killed_at = time.monotonic() - started
        print(
            f"predicted at {predicted_at:.0f}s: limit in {predicted}s; OOM-killed at {killed_at:.0f}s"
        )
        assert predicted_at < killed_at - 5
    finally:
        await monitor.close()


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 MiB tmpfs mounted on this host (root only; elsewhere the test is skipped)."""
    with mounted_tmpfs(tmp_path / "data") as mount:
        yield mount


@pytest.mark.docker
async def test_a_volume_filling_steadily_is_an_incident_before_it_is_full(
    stack: Any, tmpfs: Path
) -> None:
    fill = "i=0; while true; do head -c 2000000 /dev/zero > /data/f$i; i=$((i+1)); sleep 1; done"
    stack("fill", ["sh", "-c", fill], volumes={str(tmpfs): {"bind": "/data", "mode": "rw"}})
    monitor = ResourcesMonitor(
        spec(
            host="local",
            mounts=[str(tmpfs)],
            disk={"above": "95%"},
            trend={"window": "20s", "within": "1h"},
        )
    )
    try:
        fired = await check_until_fired(monitor, "disk_high", within=30)
        used = os.statvfs(tmpfs)
        assert used.f_bavail > 0, "the prediction came after the volume was full"
        assert fired.target == f"local:{tmpfs}"
        assert fired.message.startswith(f"{tmpfs} ") and " full in " in fired.message, fired.message
        assert fired.details["percent"] < 95 and fired.details["predicted_in_s"] > 5
        print(fired.message)
    finally:
        await monitor.close()
