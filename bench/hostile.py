"""Hostile log lines: Guard keeps answering while it scans lines built to stall a regex engine.

A ``guard run`` process follows a log file (checked every second) with rules a user might write
(``.*ERROR.*timeout``), nested quantifiers (``(a+)+$``), an ignore-case rule with ``\\s`` (which
Python answers on Unicode lines) and a backreference (Python only). A writer appends hostile
lines of 1 KB to 1 MB: non-ASCII repeats of ``ERROR``, ``a...a!``, ``é x...x!``, ``é ab ab ...``.
Meanwhile ``/healthz`` is asked every 50 ms. Then one ordinary fault is written, and the time
until it is an incident is measured. Reported: ``/healthz`` latency (p50, p99, max), the
worst event-loop stall Guard saw (``guard_event_loop_max_stall_seconds``), the time to the
incident. Run alone: ``python -m bench.hostile [--repeat N]``.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import guard_process, machine, quiet

RULES = [
    {"kind": "slow_timeout", "pattern": ".*ERROR.*timeout"},
    {"kind": "nested", "pattern": "(a+)+$"},
    {"kind": "folded", "pattern": r"(x+x+)+y\s", "ignore_case": True},
    {"kind": "twice", "pattern": r"(\w+) \1 twice"},
    {"kind": "disk_full", "pattern": "No space left on device", "severity": "critical"},
]
SIZES = [1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20]


def hostile_lines(size: int) -> list[str]:
    """Four lines of about ``size`` bytes, each bad for a different reason."""
    return [
        "é " + "ERROR " * (size // 6),
        "a" * size + "!",
        "é" + "x" * (size // 2) + "!",
        "é " + "ab " * (size // 3) + "twice",
    ]


def _ping(url: str, stop: threading.Event, out: list[float]) -> None:
    with httpx.Client(timeout=10) as client:
        while not stop.is_set():
            started = time.monotonic()
            try:
                client.get(url)
                out.append(time.monotonic() - started)
            except httpx.HTTPError:
                out.append(10.0)
            time.sleep(0.05)


def _incident(db: Path, kind: str) -> bool:
    try:
        with sqlite3.connect(db) as conn:
            return (
                conn.execute("select 1 from incident where kind = ?", (kind,)).fetchone()
                is not None
            )
    except sqlite3.Error:
        return False


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    if len(ordered) < 2:
        return ordered[0] if ordered else 0.0
    return statistics.quantiles(ordered, n=100, method="inclusive")[98]


def fault_to_incident(log: Path, db: Path) -> float:
    """Write one ordinary fault to ``log``; seconds until it is an incident (60: never)."""
    fault_at = time.monotonic()
    with open(log, "a") as f:
        f.write("2026-12-03T22:00:00Z ERROR write /var/lib/db: No space left on device\n")
    while not _incident(db, "disk_full") and time.monotonic() - fault_at < 60:
        time.sleep(0.05)
    to_incident = time.monotonic() - fault_at
    time.sleep(1)
    return to_incident


def figures(latencies: list[float], stall: float, to_incident: float) -> dict[str, Any]:
    """What a hostile run reports: ``/healthz`` latency, the worst stall, fault to incident."""
    return {
        "healthz_requests": len(latencies),
        "healthz_p50_ms": round(statistics.median(latencies) * 1000, 1),
        "healthz_p99_ms": round(_p99(latencies) * 1000, 1),
        "healthz_max_ms": round(max(latencies) * 1000, 1),
        "worst_event_loop_stall_ms": round(stall * 1000, 1),
        "fault_to_incident_s": round(to_incident, 2),
    }


def run(repeat: int = 3) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="guard-bench-hostile-log-") as tmp:
        log = Path(tmp) / "app.log"
        log.write_text("")
        monitors = [
            {
                "id": "app-log",
                "type": "logfile",
                "path": str(log),
                "every": "1s",
                "max_line_bytes": 65536,
                "rules": RULES,
            }
        ]
        with guard_process(monitors, "hostile", {"agent": {"enabled": False}}) as g:
            latencies: list[float] = []
            stop = threading.Event()
            pinger = threading.Thread(target=_ping, args=(g.url("/healthz"), stop, latencies))
            pinger.start()
            written = 0
            t0 = time.monotonic()
            try:
                with open(log, "a", encoding="utf-8") as f:
                    for _ in range(repeat):
                        for size in SIZES:
                            for line in hostile_lines(size):
                                f.write(line + "\n")
                                written += len(line.encode()) + 1
                            f.flush()
                            time.sleep(0.2)
                write_s = time.monotonic() - t0
                time.sleep(2)  # the hostile lines are being scanned
                to_incident = fault_to_incident(log, g.root / "data" / "guard.db")
            finally:
                stop.set()
                pinger.join()
            stall = g.metric("guard_event_loop_max_stall_seconds")
        return {
            "hostile_bytes": written,
            "hostile_lines": repeat * len(SIZES) * 4,
            "line_sizes": SIZES,
            "write_seconds": round(write_s, 2),
            **figures(latencies, stall, to_incident),
        }


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.hostile", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--repeat", type=int, default=3, help="rounds of every line size")
    args = parser.parse_args()
    quiet()
    print(json.dumps({"machine": machine(), "hostile": run(args.repeat)}, indent=2))


if __name__ == "__main__":
    main()
