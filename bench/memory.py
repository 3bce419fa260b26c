"""Resident memory of ``guard run``: idle, and over a soak with monitors firing, side by side.

Two ``guard run`` processes at once. The idle one watches a healthy HTTP endpoint, a quiet log
file and the Docker engine (events stream attached, no matching containers). The soak one
watches a log file that grows by ~100 lines/s of varied errors, an HTTP endpoint that flaps
between 200 and 500 every 20 s (incidents open, resolve, reopen, go flapping), and the Docker
engine. RSS (VmRSS) is sampled every 10 s, of ``guard run`` alone and with its memory helper process
(LanceDB, alive only while recalls happen). The issue asks for 10 min idle and a 1 h soak; those
are the defaults, and ``--idle-minutes/--soak-minutes`` shorten them (the figures say which).
Run alone: ``python -m bench.memory [--idle-minutes 10] [--soak-minutes 60]``.
"""

from __future__ import annotations

import argparse
import json
import random
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench.common import GuardProcess, guard_process, machine, rss_mb, tree_rss_mb


class _Flapping(BaseHTTPRequestHandler):
    flap_every = 20.0
    healthy_only = False

    def do_GET(self) -> None:
        ok = self.healthy_only or int(time.monotonic() / self.flap_every) % 2 == 0
        self.send_response(200 if ok or self.path != "/flap" else 500)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _writer(path: Path, stop: threading.Event, per_second: int = 100) -> None:
    rng = random.Random(7)
    kinds = [
        "ERROR payment provider returned 502",
        "ERROR cache miss storm on shard",
        "FATAL too many clients already",
        "WARN slow query took",
    ]
    with open(path, "a") as f:
        while not stop.is_set():
            for _ in range(per_second // 10):
                f.write(
                    f"{time.time():.6f} req={uuid.uuid4()} {rng.choice(kinds)} "
                    f"{rng.randrange(10_000)}ms\n"
                )
            f.flush()
            stop.wait(0.1)


def _sample(
    g: GuardProcess, into: list[tuple[float, float]], helpers: list[float], t0: float
) -> None:
    into.append((round(time.monotonic() - t0, 1), rss_mb(g.pid)))
    helpers.append(tree_rss_mb(g.pid))


def _summary(
    samples: list[tuple[float, float]], with_helpers: list[float], minutes: float
) -> dict[str, Any]:
    first, last = samples[0][1], samples[-1][1]
    tail = [rss for t, rss in samples if t >= samples[-1][0] / 2]
    return {
        "minutes": minutes,
        "rss_mb_start": first,
        "rss_mb_end": last,
        "rss_mb_max": max(r for _, r in samples),
        "growth_mb": round(last - first, 1),
        "growth_mb_second_half": round(tail[-1] - tail[0], 1),
        "samples": len(samples),
        "with_memory_helper_mb_max": max(with_helpers),
        "with_memory_helper_mb_end": with_helpers[-1],
    }


def run(idle_minutes: float = 10, soak_minutes: float = 60, every: float = 10) -> dict[str, Any]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Flapping)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    stop = threading.Event()
    idle_s: list[tuple[float, float]] = []
    soak_s: list[tuple[float, float]] = []
    idle_h: list[float] = []
    soak_h: list[float] = []
    logs = Path(f"/tmp/guard-bench-memory-{uuid.uuid4().hex[:8]}")
    logs.mkdir()
    (logs / "quiet.log").write_text("")
    (logs / "busy.log").write_text("")
    docker: dict[str, Any] = {
        "type": "docker",
        "selector": {"label": "guard.bench.none=1"},
        "every": "30s",
    }
    idle: list[dict[str, Any]] = [
        {"id": "web", "type": "http", "url": f"{base}/ok", "every": "5s"},
        {
            "id": "log",
            "type": "logfile",
            "path": str(logs / "quiet.log"),
            "every": "10s",
            "rules": [{"kind": "err", "pattern": "ERROR"}],
        },
        {"id": "engine", **docker},
    ]
    soak: list[dict[str, Any]] = [
        {"id": "web", "type": "http", "url": f"{base}/flap", "every": "2s"},
        {
            "id": "log",
            "type": "logfile",
            "path": str(logs / "busy.log"),
            "every": "1s",
            "rules": [
                {"kind": "fatal", "pattern": "FATAL", "severity": "critical"},
                {"kind": "err", "pattern": r"\bERROR\b"},
            ],
        },
        {"id": "engine", **docker},
    ]
    writer = threading.Thread(target=_writer, args=(logs / "busy.log", stop), daemon=True)
    try:
        with guard_process(idle, "idle") as gi, guard_process(soak, "soak") as gs:
            writer.start()
            t0 = time.monotonic()
            end = max(idle_minutes, soak_minutes) * 60
            while (now := time.monotonic() - t0) <= end:
                if now <= idle_minutes * 60:
                    _sample(gi, idle_s, idle_h, t0)
                if now <= soak_minutes * 60:
                    _sample(gs, soak_s, soak_h, t0)
                time.sleep(every)
            opened = gs.metric('guard_incident_events_total{type="opened"}')
            reopened = gs.metric('guard_incident_events_total{type="reopened"}')
            signals = sum(
                gs.metric(f'guard_signals_total{{kind="{k}",source="logfile",status="firing"}}')
                for k in ("fatal", "err")
            )
    finally:
        stop.set()
        server.shutdown()
        for f in logs.iterdir():
            f.unlink()
        logs.rmdir()
    return {
        "what": f"VmRSS of guard run, sampled every {every:g}s; goal <= 150 MB and flat",
        "idle": _summary(idle_s, idle_h, idle_minutes),
        "soak": {
            **_summary(soak_s, soak_h, soak_minutes),
            "log_signals": int(signals),
            "incidents_opened": int(opened),
            "incidents_reopened": int(reopened),
        },
        "idle_samples": idle_s,
        "soak_samples": soak_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle-minutes", type=float, default=10)
    parser.add_argument("--soak-minutes", type=float, default=60)
    args = parser.parse_args()
    print(
        json.dumps(
            {"machine": machine(), "memory": run(args.idle_minutes, args.soak_minutes)}, indent=2
        )
    )


if __name__ == "__main__":
    main()
