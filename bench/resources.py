"""The cost of ``type: resources``: 200 containers watched, CPU seconds per check.

Starts ``--containers`` busybox ``sleep`` containers (labelled, no network), builds one
resources monitor selecting them (memory and pids thresholds, a trend), and runs its check
``--cycles`` times after one warm-up cycle. Reported per cycle: the CPU seconds of this process
(every thread: the monitor's stats requests run in a pool), the wall time, and the engine's
own CPU (dockerd, from /proc) which answers the stats requests; then the share of one core
each is at a 15 s interval (the issue's bound: 5 % for Guard). For the choice of API: the wall
time of one container's ``stats(stream=False)`` with and without ``one_shot``. And the cost
of one ``host: local`` check with 2 mounts. Last, a real ``guard run`` watching the same
containers every 15 s: its whole CPU (checks, triage of every signal) over ``--seconds``.

Run alone: ``python -m bench.resources [--containers 200] [--cycles 5]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.common import guard_process, machine, quiet, sleepers

IMAGE = "guard-test-busybox:sandbox"
INTERVAL = 15.0


def _dockerd_cpu() -> float:
    """CPU seconds dockerd has used so far (0 if it is not visible from here)."""
    tick = os.sysconf("SC_CLK_TCK")
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if (proc / "comm").read_text().strip() == "dockerd":
                fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / tick
    return 0.0


async def _cycles(monitor: Any, cycles: int) -> dict[str, Any]:
    await monitor.check({})  # warm-up: the client, the pool, the first CPU figures
    cpu, wall, engine, signals = [], [], [], 0
    for _ in range(cycles):
        c0, w0, e0 = time.process_time(), time.perf_counter(), _dockerd_cpu()
        obs = await monitor.check({})
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
        engine.append(_dockerd_cpu() - e0)
        signals = len(obs.signals)
    mean = sum(cpu) / len(cpu)
    return {
        "cpu_s_per_cycle": round(mean, 3),
        "cpu_s_max": round(max(cpu), 3),
        "wall_s_per_cycle": round(sum(wall) / len(wall), 3),
        "core_percent_at_15s": round(100 * mean / INTERVAL, 2),
        "dockerd_cpu_s_per_cycle": round(sum(engine) / len(engine), 3),
        "dockerd_core_percent_at_15s": round(100 * sum(engine) / len(engine) / INTERVAL, 2),
        "signals_per_cycle": signals,
    }


def _process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _guard_run(entry: dict[str, Any], seconds: float) -> dict[str, Any]:
    """The whole ``guard run`` (checks, triage of every signal, the web stack idle) watching
    the containers every 15 s: its CPU over ``seconds`` after its first checks."""
    with guard_process([entry], "resources") as guard:
        time.sleep(INTERVAL + 5)  # the first checks, the first CPU figures, the first triage
        c0, e0, w0 = _process_cpu(guard.pid), _dockerd_cpu(), time.monotonic()
        time.sleep(seconds)
        cpu, engine = _process_cpu(guard.pid) - c0, _dockerd_cpu() - e0
        wall = time.monotonic() - w0
        return {
            "seconds": round(wall),
            "guard_cpu_s": round(cpu, 2),
            "guard_core_percent": round(100 * cpu / wall, 2),
            "dockerd_core_percent": round(100 * engine / wall, 2),
        }


def _stats_wall(client: Any, container: Any) -> dict[str, float]:
    """One container's stats: the default (two samples) against ``one_shot``."""
    figures = {}
    for name, kwargs in (("two_samples", {}), ("one_shot", {"one_shot": True})):
        started = time.perf_counter()
        client.api.stats(container.id, stream=False, **kwargs)
        figures[f"{name}_s"] = round(time.perf_counter() - started, 3)
    return figures


def run(containers: int = 200, cycles: int = 5, seconds: float = 60) -> dict[str, Any]:
    import docker

    from guard.monitors.resources import ResourcesMonitor
    from guard.playbooks.models import Playbook
    from tests.helpers.images import ensure_busybox_image

    client = docker.from_env(timeout=120)
    ensure_busybox_image(client, IMAGE)
    value = uuid.uuid4().hex[:8]
    started = sleepers(client, IMAGE, containers, "guard-bench-res", value, parallel=8)
    entry = {
        "id": "bench-resources",
        "type": "resources",
        "selector": {"label": f"guard.bench={value}"},
        "memory": {"above": "90%", "for": 3},
        "pids": {"above": 100},
        "trend": {"window": "10m", "within": "30m"},
        "every": "15s",
    }
    host = {"id": "bench-host", "type": "resources", "host": "local", "mounts": ["/", "/tmp"]}
    host |= {"memory": {"above": "95%"}, "disk": {"above": "90%"}, "trend": {}}
    [spec, host_spec] = Playbook.model_validate({"name": "b", "monitors": [entry, host]}).monitors
    monitor, host_monitor = ResourcesMonitor(spec), ResourcesMonitor(host_spec)  # type: ignore[arg-type]
    try:
        report: dict[str, Any] = {"machine": machine(), "containers": containers}
        report["cycles"] = cycles
        report["containers_check"] = asyncio.run(_cycles(monitor, cycles))
        report["stats_call"] = _stats_wall(client, started[0])
        report["host_check"] = asyncio.run(_cycles(host_monitor, cycles))
        report["guard_run"] = _guard_run(entry, seconds)
        del report["host_check"]["dockerd_cpu_s_per_cycle"]
        del report["host_check"]["dockerd_core_percent_at_15s"]
        return report
    finally:
        asyncio.run(monitor.close())
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda c: c.remove(force=True), started))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.resources")
    parser.add_argument("--containers", type=int, default=200)
    parser.add_argument("--cycles", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=60, help="the guard run phase")
    args = parser.parse_args()
    quiet()
    print(json.dumps(run(args.containers, args.cycles, args.seconds), indent=2))


if __name__ == "__main__":
    main()
