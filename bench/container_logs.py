"""Container logs through a real ``guard run``: write-to-incident latency, and 300 containers.

- **latency**: one container writes a numbered ``ERROR`` line every ``--every`` s (1.5: each line
  is alone, nothing after it tells that it ended); each number is its
  own incident (``group_by: [n]``). Latency is the incident's ``opened_at`` (stored by Guard)
  minus the engine's timestamp of the line (when the container wrote it), per ``multiline``
  setting (``auto``, the default, and ``none``, which never waits).
- **scale**: 300 tiny containers, each writing a matching line every 2 s, followed by one
  docker monitor while ``/healthz`` is asked every 50 ms. Reported: the ``/healthz`` latency
  while the containers start (300 start events, 300 streams opened, the engine busy) and once
  all are followed, Guard's threads and RSS, and how many containers' lines became incidents
  (the storm breaker is raised so that each container can open one).

Run alone: ``python -m bench.container_logs [--lines N] [--containers N]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sqlite3
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.common import GuardProcess, guard_process, machine, percentiles, rss_mb
from bench.hostile import _ping

IMAGE = "guard-test-busybox:sandbox"


def _client() -> Any:
    import docker

    from tests.helpers.images import ensure_busybox_image

    client = docker.from_env(timeout=60)
    ensure_busybox_image(client, IMAGE)
    return client


def _monitor(label: str, multiline: str, group_by: Any) -> dict[str, Any]:
    return {
        "id": "containers",
        "type": "docker",
        "selector": {"label": label},
        "every": "1h",
        "multiline": multiline,
        "rules": [{"kind": "boom", "pattern": r"ERROR boom (?P<n>\d+)", "group_by": group_by}],
    }


def _opened(db: Path) -> dict[str, datetime]:
    with contextlib.suppress(sqlite3.Error), sqlite3.connect(db) as conn:
        rows = conn.execute("select message, opened_at from incident where kind='boom'")
        return {m.split()[-1]: datetime.fromisoformat(at) for m, at in rows}
    return {}


def latency(multiline: str, lines: int, every: float) -> dict[str, Any]:
    client = _client()
    value = uuid.uuid4().hex[:12]
    monitors = [_monitor(f"guard.bench={value}", multiline, ["n"])]
    with guard_process(monitors, "container-latency", {"agent": {"enabled": False}}) as g:
        time.sleep(1.0)  # the events stream is attached
        script = (
            f'for i in $(seq 1 {lines}); do echo "ERROR boom $i"; sleep {every}; done; sleep 60'
        )
        c = client.containers.run(
            IMAGE,
            ["sh", "-c", script],
            detach=True,
            labels={"guard.bench": value},
            network_mode="none",
        )
        try:
            db = g.root / "data" / "guard.db"
            end = time.monotonic() + lines * every + 30
            while len(_opened(db)) < lines and time.monotonic() < end:
                time.sleep(0.2)
            written = {}
            for raw in c.logs(timestamps=True).decode().splitlines():
                stamp, _, text = raw.partition(" ")
                written[text.split()[-1]] = datetime.fromisoformat(stamp[:26].rstrip("Z"))
            opened = _opened(db)
        finally:
            c.remove(force=True)
    gaps = [(opened[n] - written[n]).total_seconds() for n in written if n in opened]
    return {
        "multiline": multiline,
        "every_s": every,
        "lines": lines,
        "incidents": len(opened),
        **percentiles(gaps),
    }


def _start_many(client: Any, count: int, value: str) -> list[Any]:
    def start(i: int) -> Any:
        script = f'while true; do echo "ERROR boom {i}"; sleep 2; done'
        return client.containers.run(
            IMAGE,
            ["sh", "-c", script],
            detach=True,
            labels={"guard.bench": value},
            name=f"guard-bench-many-{value}-{i}",
            network_mode="none",
        )

    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(start, range(count)))


def _threads(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/task").iterdir()))


def _ms(latencies: list[float]) -> dict[str, float]:
    found = percentiles([x * 1000 for x in latencies]) if latencies else {}
    return {k: round(v, 1) if k != "n" else v for k, v in found.items()}


def scale(count: int, seconds: float, storm: bool = False) -> dict[str, Any]:
    client = _client()
    value = uuid.uuid4().hex[:12]
    monitors = [_monitor(f"guard.bench={value}", "auto", ["n"])]
    latencies: list[float] = []
    stop = threading.Event()
    started: list[Any] = []
    g: GuardProcess
    config: dict[str, Any] = {"agent": {"enabled": False}}
    if not storm:  # let each container open its own incident (the breaker would fold them)
        config["triage"] = {"max_new_incidents": 10 * count}
    with guard_process(monitors, "container-scale", config) as g:
        pinger = threading.Thread(target=_ping, args=(g.url("/healthz"), stop, latencies))
        pinger.start()
        threads, rss = [_threads(g.pid)], [rss_mb(g.pid)]
        try:
            t0 = time.monotonic()
            started = _start_many(client, count, value)
            start_s = time.monotonic() - t0
            starting = len(latencies)
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                threads.append(_threads(g.pid))
                rss.append(rss_mb(g.pid))
                time.sleep(1)
            followed = len(_opened(g.root / "data" / "guard.db"))
        finally:
            stop.set()
            pinger.join()
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda c: c.remove(force=True), started))
        stall = g.metric("guard_event_loop_max_stall_seconds")
    return {
        "containers": count,
        "storm_breaker": "default (20 new incidents, then folded)" if storm else "raised",
        "start_all_s": round(start_s, 1),
        "watched_s": seconds,
        "containers_with_an_incident": followed,
        "healthz_ms_while_starting": _ms(latencies[:starting]),
        "healthz_ms_all_followed": _ms(latencies[starting:]),
        "guard_threads_max": max(threads),
        "guard_rss_mb_max": max(rss),
        "worst_event_loop_stall_ms": round(stall * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.container_logs")
    parser.add_argument("--lines", type=int, default=12)
    parser.add_argument("--every", type=float, default=1.5)
    parser.add_argument("--containers", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--only", choices=["latency", "scale"])
    parser.add_argument("--storm", action="store_true", help="keep the default storm breaker")
    args = parser.parse_args()
    out: dict[str, Any] = {"machine": machine()}
    if args.only != "scale":
        out["latency_s"] = [latency(m, args.lines, args.every) for m in ("auto", "none")]
    if args.only != "latency":
        out["scale"] = scale(args.containers, args.seconds, args.storm)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
