"""Alert flood: ``/healthz`` latency while a ``guard run`` takes 1,000 alerts a second.

A ``guard run`` process serves one Alertmanager intake source (``--limit``: its ``rate``, else
the default); a sender posts grouped notifications (``--per-request`` alerts each, every alert
new) at ``--rate`` alerts per second for ``--seconds``, while a prober asks ``/healthz`` every
100 ms on a fresh connection, as a kubelet does. Reported: the probe's latency (p50, p95, p99,
max), the hook's answers by status and their latency, and whether every alert answered 2xx is
in the store (the sum of the source's incident counts, storm folds included). Run alone:
``python -m bench.intake``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import threading
import time
import uuid
from collections import Counter
from typing import Any

import httpx

from bench.common import guard_process, machine, percentiles, rss_mb

TOKEN = "bench-intake-token-7c1d"


def _alert(name: str) -> dict[str, Any]:
    labels = {"alertname": "Flood", "instance": name, "severity": "warning"}
    return {
        "status": "firing",
        "labels": labels,
        "annotations": {"summary": f"flood on {name}"},
        "startsAt": "2026-12-05T07:00:00Z",
        "endsAt": "0001-01-01T00:00:00Z",
        "fingerprint": uuid.uuid4().hex[:16],
    }


def _probe(url: str, stop: threading.Event, out: list[float], failed: list[int]) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        try:
            status = httpx.get(url, timeout=10).status_code
        except httpx.TransportError:
            status = 0
        out.append(time.perf_counter() - started)
        if status != 200:
            failed.append(status)
        stop.wait(0.1)


async def _flood(url: str, rate: int, per_request: int, seconds: float) -> dict[str, Any]:
    statuses: Counter[int] = Counter()
    latencies: list[float] = []
    headers = {"Authorization": f"Bearer {TOKEN}"}
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(timeout=30, limits=limits) as client:

        async def one() -> None:
            body = {"version": "4", "status": "firing", "receiver": "guard"}
            body["alerts"] = [_alert(f"n-{uuid.uuid4().hex[:8]}") for _ in range(per_request)]
            started = time.perf_counter()
            try:
                statuses[(await client.post(url, json=body, headers=headers)).status_code] += 1
            except httpx.TransportError:
                statuses[0] += 1
            latencies.append(time.perf_counter() - started)

        every = per_request / rate  # seconds between requests
        tasks = []
        began = time.monotonic()
        sent = 0
        while time.monotonic() - began < seconds:
            due = int((time.monotonic() - began) / every) + 1
            while sent < due:
                tasks.append(asyncio.create_task(one()))
                sent += 1
            await asyncio.sleep(every / 2)
        await asyncio.gather(*tasks)
        took = time.monotonic() - began
    return {
        "requests": sent,
        "alerts_sent": sent * per_request,
        "alerts_per_second": round(sent * per_request / took),
        "answers": dict(sorted(statuses.items())),
        "hook_latency_s": percentiles(latencies),
    }


def run(
    rate: int = 1000, per_request: int = 10, seconds: float = 5.0, limit: str | None = None
) -> dict[str, Any]:
    source = {"id": "flood", "type": "alertmanager", "token": TOKEN}
    if limit:
        source["rate"] = limit
    with guard_process([], "intake", {"intake": [source]}) as guard:
        probes: list[float] = []
        failed: list[int] = []
        stop = threading.Event()
        prober = threading.Thread(target=_probe, args=(guard.url("/healthz"), stop, probes, failed))
        prober.start()
        time.sleep(1)
        quiet = len(probes)
        try:
            flood = asyncio.run(_flood(guard.url("/hooks/flood"), rate, per_request, seconds))
        finally:
            stop.set()
            prober.join()
        rss = rss_mb(guard.pid)
        db = sqlite3.connect(guard.root / "data" / "guard.db")
        stored = db.execute(
            "SELECT COALESCE(SUM(count), 0) FROM incident WHERE monitor_id = 'intake:flood'"
        ).fetchone()[0]
        db.close()
    acknowledged = flood["answers"].get(200, 0) * per_request
    return {
        "source_rate": limit or "default (50/s, burst 500)",
        **flood,
        "healthz_during_flood_s": percentiles(probes[quiet:]) | _p99(probes[quiet:]),
        "healthz_not_200": len(failed),
        "acknowledged_alerts": acknowledged,
        "stored_alerts": stored,
        "lost": max(acknowledged - stored, 0),
        "rss_mb_after": rss,
    }


def _p99(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p99": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 4)}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.intake", description=__doc__)
    parser.add_argument("--rate", type=int, default=1000, help="alerts per second")
    parser.add_argument("--per-request", type=int, default=10, help="alerts per notification")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--limit", help="the source's rate: (default: Guard's default)")
    args = parser.parse_args()
    found = run(args.rate, args.per_request, args.seconds, args.limit)
    report = {"machine": machine(), "intake": found}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
