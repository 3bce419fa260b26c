"""Journal read throughput: Guard's journald monitor against journalctl's own JSON output.

A real journal file (systemd-journal-remote) of ``--entries`` entries over 7 units, a stated
fraction matching one of 3 rules. Guard runs ``JournaldMonitor.check`` from the beginning, as
``guard run --once`` does: journalctl prints JSON, Guard parses it, frames multi-line events
(``multiline: auto``, the default) and folds matched entries into signals. The reference is
``journalctl --output=json --all`` into ``wc -l`` on the same journal: the floor Guard cannot go
below, since it reads that output. The counts are compared with the truth. Best of ``--repeat``
runs each, with the CPU time of Guard's own process (journalctl's apart); Guard's
Python-allocated peak (tracemalloc) is measured in a separate run. Run alone:
``python -m bench.journal``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench.common import machine
from guard.monitors.journald import JournaldMonitor
from guard.playbooks.models import JournaldMonitorSpec
from tests.helpers.journal import Journal

RULES = [
    {"kind": "payment_failed", "pattern": r"payment failed for order \d+"},
    {"kind": "oom", "pattern": "Out of memory: Killed process"},
    {"kind": "traceback", "pattern": r"Traceback \(most recent call last\)"},
]


def write(folder: Path, entries: int, every: int) -> int:
    """A journal of ``entries`` entries, each ``every``-th one matching; the matches."""
    journal = Journal(folder)
    batch, matches = [], 0
    for n in range(entries):
        unit = f"svc{n % 7}.service"
        if n % every == 0:
            text, matches = f"ERROR payment failed for order {n}: upstream 503", matches + 1
        else:
            text = f"INFO GET /api/orders/{n} 200 in {n % 97} ms request_id=req-{n:08x}"
        batch.append(journal.entry(text, unit=unit, priority=3 if n % every == 0 else 6))
        if len(batch) == 50_000:
            journal.write(batch)
            batch = []
    journal.write(batch)
    return matches


def guard_once(folder: Path) -> tuple[float, int, float]:
    """Seconds, signals counted, and CPU seconds of Guard's own process (not journalctl's)."""
    spec = JournaldMonitorSpec.model_validate(
        {"id": "j", "type": "journald", "directory": str(folder), "start": "beginning"}
        | {"rules": RULES, "group_by": "rule"}
    )
    started, cpu = time.perf_counter(), time.process_time()
    obs = asyncio.run(JournaldMonitor(spec).check({}))
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    return elapsed, sum(s.count for s in obs.signals), cpu


def journalctl_once(folder: Path) -> tuple[float, int]:
    exe = shutil.which("journalctl") or "journalctl"
    started = time.perf_counter()
    out = subprocess.run(
        f"{exe} --directory {folder} --output=json --all --no-pager | wc -l",
        shell=True,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return time.perf_counter() - started, int(out.strip())


def run(entries: int, every: int, repeat: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="guard-bench-journal-") as tmp:
        folder = Path(tmp) / "journal"
        started = time.perf_counter()
        matches = write(folder, entries, every)
        wrote = time.perf_counter() - started
        guard = min(guard_once(folder) for _ in range(repeat))
        floor = min(journalctl_once(folder) for _ in range(repeat))
        assert guard[1] == matches, (guard, matches)
        assert floor[1] == entries, (floor, entries)
        tracemalloc.start()
        guard_once(folder)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        size = sum(p.stat().st_blocks * 512 for p in folder.iterdir())
    return {
        "entries": entries,
        "matching": matches,
        "journal_mb_on_disk": round(size / 1e6, 1),
        "write_seconds": round(wrote, 2),
        "guard_seconds": round(guard[0], 3),
        "guard_entries_per_second": round(entries / guard[0]),
        "guard_cpu_seconds": round(guard[2], 3),
        "journalctl_json_seconds": round(floor[0], 3),
        "journalctl_entries_per_second": round(entries / floor[0]),
        "guard_over_journalctl": round(guard[0] / floor[0], 2),
        "guard_peak_python_mb": round(peak / 1e6, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=200_000)
    parser.add_argument("--every", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    runs = [run(args.entries, every, args.repeat) for every in args.every]
    print(json.dumps({"machine": machine(), "journal": runs}, indent=2))


if __name__ == "__main__":
    main()
