"""Scale on one box: many HTTP and log-file monitors in one ``guard run``, and what each costs.

The issue's load: 1,000 HTTP monitors every 10 s and 200 log files every 5 s (1,200 monitors),
against a local server that runs in its own process (its CPU is not Guard's) and counts the
requests each path gets, so "every endpoint checked at least 5 times a minute" is counted by
the endpoint. A writer appends an ordinary line to every log file every few seconds (no rule
matches it), so each check reads new bytes. Over a measured minute (after a warm-up):

- RSS of ``guard run`` with its helper processes (max of samples every 2 s);
- CPU of the same tree (``utime + stime`` from ``/proc``), as % of one core;
- requests per endpoint (min, median), and the p99 of ``guard_check_lag_seconds`` (the
  scheduled start of a check against its actual start), estimated from the histogram's buckets
  as the upper bound of the bucket the 99th percentile falls in (n/a on a Guard without it);
- cost per monitor at 100, 500 and 1,200 monitors (HTTP and log files 5:1): RSS above an empty
  ``guard run`` divided by the monitors, and CPU ms per check.

Run alone: ``python -m bench.scale [--seconds 60] [--sizes 100,500,1200]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from bench.common import children, guard_process, machine, rss_mb, tree_rss_mb

TICKS = os.sysconf("SC_CLK_TCK")
HTTP_EVERY, LOG_EVERY = 10, 5


# -- the endpoint server, in its own process ------------------------------------------------------


def _serve(port_out: Any) -> None:
    """A keep-alive HTTP/1.1 server answering 200 to every path and counting requests per path;
    ``GET /_counts`` answers the counts as JSON."""
    counts: Counter[str] = Counter()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                path = line.split()[1].decode() if len(line.split()) > 1 else "/"
                while (await reader.readline()).strip():
                    pass
                body = json.dumps(counts).encode() if path == "/_counts" else b"ok"
                if path != "/_counts":
                    counts[path] += 1
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
                )
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=2048)
        port_out.put(server.sockets[0].getsockname()[1])
        async with server:
            await server.serve_forever()

    asyncio.run(main())


class Endpoints:
    def __enter__(self) -> Endpoints:
        ctx = multiprocessing.get_context("spawn")
        queue = ctx.Queue()
        self.proc = ctx.Process(target=_serve, args=(queue,), daemon=True)
        self.proc.start()
        self.base = f"http://127.0.0.1:{queue.get(timeout=30)}"
        return self

    def counts(self) -> Counter[str]:
        return Counter(httpx.get(self.base + "/_counts", timeout=10).json())

    def __exit__(self, *exc: object) -> None:
        self.proc.kill()
        self.proc.join(5)


# -- measuring the process tree -------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` and its live descendants, plus what waited-for children used."""
    total = 0.0
    for p in [pid, *children(pid)]:
        with contextlib.suppress(OSError), open(f"/proc/{p}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15]) / TICKS  # utime stime cutime cstime
    return total


def lag_buckets(text: str) -> dict[float, float]:
    """Cumulative counts of ``guard_check_lag_seconds`` by upper bound, summed over labels."""
    found: dict[float, float] = {}
    for line in text.splitlines():
        if line.startswith("guard_check_lag_seconds_bucket{"):
            le = line.split('le="', 1)[1].split('"', 1)[0]
            bound = float("inf") if le == "+Inf" else float(le)
            found[bound] = found.get(bound, 0.0) + float(line.split()[-1])
    return found


def p99_bound(before: dict[float, float], after: dict[float, float]) -> float | None:
    """The upper bound of the bucket holding the 99th percentile of checks in the window."""
    if not after:
        return None
    diff = {b: after[b] - before.get(b, 0.0) for b in sorted(after)}
    total = diff[float("inf")]
    if total <= 0:
        return None
    return next(b for b, n in diff.items() if n >= 0.99 * total)


# -- one run --------------------------------------------------------------------------------------


def _writer(paths: list[Path], stop: threading.Event, every: float = 2.0) -> None:
    n = 0
    while not stop.wait(every):
        n += 1
        for p in paths:
            with open(p, "a") as f:
                f.write(f"2026-12-03T10:00:{n % 60:02d}Z INFO request {n} served in 3ms\n")


def measure(
    http: int, logs: int, endpoints: Endpoints, seconds: float, warmup: float
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="guard-bench-scale-logs-") as tmp:
        paths = [Path(tmp) / f"app-{i}.log" for i in range(logs)]
        for p in paths:
            p.write_text("")
        monitors: list[dict[str, Any]] = [
            {
                "id": f"web-{i}",
                "type": "http",
                "url": f"{endpoints.base}/m/{i}",
                "every": f"{HTTP_EVERY}s",
            }
            for i in range(http)
        ]
        monitors += [
            {
                "id": f"log-{i}",
                "type": "logfile",
                "path": str(p),
                "every": f"{LOG_EVERY}s",
                "rules": [
                    {"kind": "app_error", "pattern": r"\bERROR\b"},
                    {"kind": "oom", "pattern": "out of memory", "severity": "critical"},
                ],
            }
            for i, p in enumerate(paths)
        ]
        stop = threading.Event()
        writer = threading.Thread(target=_writer, args=(paths, stop), daemon=True)
        writer.start()
        config = {"sandbox": {"backend": "local"}}
        try:
            with guard_process(monitors, f"scale-{http + logs}", config) as g:
                time.sleep(warmup)
                counts0, lag0 = endpoints.counts(), lag_buckets(_metrics(g.url("/metrics")))
                cpu0, t0 = cpu_seconds(g.pid), time.monotonic()
                rss: list[float] = []
                while time.monotonic() - t0 < seconds:
                    rss.append(tree_rss_mb(g.pid))
                    time.sleep(2)
                cpu1, t1 = cpu_seconds(g.pid), time.monotonic()
                counts1, text = endpoints.counts(), _metrics(g.url("/metrics"))
                lag1 = lag_buckets(text)
                own_rss = rss_mb(g.pid)
                helpers = len(children(g.pid))
        finally:
            stop.set()
            writer.join()
    elapsed = t1 - t0
    per_path = sorted(counts1[f"/m/{i}"] - counts0[f"/m/{i}"] for i in range(http))
    checks = sum(per_path) + logs * elapsed / LOG_EVERY
    diff_count = lag1.get(float("inf"), 0.0) - lag0.get(float("inf"), 0.0)
    if diff_count:
        checks = diff_count  # Guard's own count of checks started, when it keeps one
    per_minute = 60 / elapsed
    return {
        "monitors": http + logs,
        "http": http,
        "logfiles": logs,
        "window_s": round(elapsed, 1),
        "rss_mb_max": round(max(rss), 1),
        "rss_mb_guard_end": own_rss,
        "helpers": helpers,
        "cpu_percent_of_one_core": round(100 * (cpu1 - cpu0) / elapsed, 1),
        "checks": int(checks),
        "cpu_ms_per_check": round(1000 * (cpu1 - cpu0) / max(checks, 1), 3),
        "endpoint_checks_per_minute_min": round(per_path[0] * per_minute, 1) if per_path else None,
        "endpoint_checks_per_minute_median": (
            round(per_path[len(per_path) // 2] * per_minute, 1) if per_path else None
        ),
        "check_lag_p99_s_at_most": p99_bound(lag0, lag1),
    }


def _metrics(url: str) -> str:
    return httpx.get(url, timeout=30).text


def split(total: int) -> tuple[int, int]:
    """HTTP monitors and log files in the issue's ratio (1,000 : 200)."""
    logs = round(total / 6)
    return total - logs, logs


def run(
    seconds: float = 60, warmup: float = 20, sizes: tuple[int, ...] = (100, 500, 1200)
) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with Endpoints() as endpoints:
        empty = measure(0, 0, endpoints, min(seconds, 20), 10)
        results["empty"] = empty
        for n in sizes:
            r = measure(*split(n), endpoints, seconds, warmup)
            r["kb_per_monitor"] = round((r["rss_mb_max"] - empty["rss_mb_max"]) * 1024 / n, 1)
            results[str(n)] = r
    full = results.get("1200")
    goals = None
    if full is not None:
        goals = {
            "rss_le_150_mb": full["rss_mb_max"] <= 150,
            "cpu_le_25_percent": full["cpu_percent_of_one_core"] <= 25,
            "rss_le_100_mb": full["rss_mb_max"] <= 100,  # issue 48's goals
            "cpu_le_15_percent": full["cpu_percent_of_one_core"] <= 15,
            "every_endpoint_ge_5_per_minute": (full["endpoint_checks_per_minute_min"] or 0) >= 5,
            "p99_lag_le_1_s": (
                full["check_lag_p99_s_at_most"] is not None and full["check_lag_p99_s_at_most"] <= 1
            ),
        }
    return {
        "what": f"HTTP monitors every {HTTP_EVERY}s and log files every {LOG_EVERY}s (5:1), "
        "one guard run, measured over a window after a warm-up",
        "load_average": os.getloadavg(),
        "runs": results,
        "goals_at_1200": goals,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--warmup", type=float, default=20)
    parser.add_argument("--sizes", default="100,500,1200")
    args = parser.parse_args()
    sizes = tuple(int(s) for s in args.sizes.split(","))
    print(
        json.dumps({"machine": machine(), "scale": run(args.seconds, args.warmup, sizes)}, indent=2)
    )


if __name__ == "__main__":
    main()
