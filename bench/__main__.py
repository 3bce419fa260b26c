"""``python -m bench``: every benchmark in one run, printed as one JSON document.

Each is also runnable alone (``python -m bench.detection``, ``bench.logscan``, ``bench.memory``,
``bench.storm``, ``bench.mttr``, ``bench.grouping``, ``bench.redaction``, ``bench.scale``,
``bench.store``, ``bench.web``, ``bench.diagnosis``, ``bench.resources``); ``bench.crash`` and
``bench.soak`` (the fault soak: root, a dockerd of its own, libfaketime) run only alone. Needs a
Docker engine (detection, memory, resources), GNU grep (logscan) and busybox-static (the offline
test image).
Durations of the memory benchmark default to what the issue asks (10 min idle, 1 h soak); pass
shorter ones for a quick run, the JSON says which.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

from bench import (
    compare,
    detection,
    diagnosis,
    grouping,
    logscan,
    memory,
    mttr,
    redaction,
    resources,
    scale,
    store,
    storm,
    web,
)
from bench.common import machine, quiet


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--mttr-kills", type=int, default=10)
    parser.add_argument("--lines", type=int, default=2_000_000)
    parser.add_argument("--idle-minutes", type=float, default=10)
    parser.add_argument("--soak-minutes", type=float, default=60)
    parser.add_argument(
        "--compare",
        action="store_true",
        help="run the quick profile and print each figure beside docs/BENCHMARKS.md's record",
    )
    parser.add_argument("--only", default="", help="with --compare: comma-separated benchmarks")
    parser.add_argument("--strict", action="store_true", help="with --compare: exit 1 on a flag")
    parser.add_argument(
        "--runs", type=int, default=1, help="with --compare: runs of each (median, min, max)"
    )
    parser.add_argument(
        "--load",
        choices=("quiet", "loaded", "both"),
        default="both",
        help="with --compare: quiet, beside two busy processes, or both (default)",
    )
    args = parser.parse_args()
    quiet()
    if args.compare:
        only = {name for name in args.only.split(",") if name} or None
        raise SystemExit(compare.main(only, args.strict, args.runs, args.load))
    started = time.monotonic()
    report: dict[str, Any] = {"machine": machine()}
    report["detection"] = asyncio.run(detection.run(args.kills))
    report["mttr"] = asyncio.run(mttr.run(args.mttr_kills))
    report["logscan"] = logscan.run(args.lines)
    report["storm"] = storm.run()
    report["grouping"] = grouping.run()
    report["redaction"] = redaction.run()
    report["scale"] = scale.run()
    report["store"] = store.run()
    report["web"] = [web.run_size(n, 30) for n in (1_000, 100_000)]
    report["diagnosis"] = asyncio.run(diagnosis.run(diagnosis.endpoint()))
    report["resources"] = resources.run()
    report["memory"] = memory.run(args.idle_minutes, args.soak_minutes)
    report["bench_seconds"] = round(time.monotonic() - started)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
