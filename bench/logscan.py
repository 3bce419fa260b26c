"""Log scan throughput: Guard's logfile monitor against ``grep -E -c -f patterns.txt``.

One file of 2,000,000 lines (~210 MB, timestamps, request ids, mostly INFO), 50 rules (ERE
syntax that Python reads the same way: ``[0-9]`` rather than ``\\d``), a stated fraction of
lines matching. Guard runs ``LogfileMonitor.scan`` from the start of the file, as a check does (with
``multiline: auto``, the default, and side by side with ``multiline: none``):
read, match (first rule wins), fold matched lines into signals (masking timestamps and ids);
with Hyperscan as the prefilter (x86-64) and, for machines without it, with RE2 only.
grep only counts. ``stages``: the scan again with lines folded by rule (no masking or
templates), so the grouping's cost is the difference, and ``redact`` timed over the messages the
scan redacts (one per distinct masked line) beside every matched line; the redaction policy
(its 284 compiled rules) is built once per process before any scan is timed, and what that
took is printed apart (``redaction_policy_load_seconds``). The counts are
compared, so a fast wrong answer cannot pass unnoticed. Best of ``--repeat`` runs each, page
cache warm. Run alone: ``python -m bench.logscan``.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.common import machine
from guard.domain.fingerprint import mask
from guard.monitors.logblocks import CHUNK
from guard.monitors.logfile import LogfileMonitor
from guard.monitors.matcher import Engine, LineMatcher
from guard.playbooks.models import LogfileMonitorSpec
from guard.redact import policy, redact

PATTERNS = [
    r"\bFATAL\b",
    r"OutOfMemoryError",
    r"connection refused",
    r"timed? ?out after [0-9]+ ?ms",
    r"status=5[0-9][0-9]",
    r"^panic: ",
    r"Traceback \(most recent call last\)",
    r"segfault at [0-9a-f]+",
    r"disk \S+ is full",
    r"too many (open files|clients)",
    r"deadlock detected",
    r"OOM[- ]?kill",
    r"certificate (has )?expired",
    r"no space left on device",
    r"ECONNRESET",
    r"broken pipe",
    r"permission denied",
    r"could not connect to server",
    r"replication lag [0-9]{3,}",
    r"\bCRITICAL\b",
] + [rf"\berr(or)?[-_ ]code[=:]E{i:03d}\b" for i in range(20, 50)]
BAD = [
    "FATAL database is down",
    "java.lang.OutOfMemoryError: Java heap space",
    "dial tcp 10.0.0.7:5432: connection refused",
    "request timed out after 3000ms",
    "upstream answered status=503",
    "write: broken pipe",
    "error code=E031 in billing",
    "could not connect to server: No route to host",
    "replication lag 4521 ms",
]
WORDS = [
    "user",
    "request",
    "served",
    "cache",
    "hit",
    "miss",
    "GET",
    "POST",
    "path",
    "/api/v1/items",
    "id",
    "took",
    "ms",
    "ok",
    "info",
    "debug",
    "trace",
    "session",
    "worker",
    "queue",
    "job",
    "done",
    "started",
]


def write_log(path: Path, lines: int, match_every: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(lines):
            ts = f"2026-12-02T18:{i // 60000 % 60:02d}:{i // 1000 % 60:02d}.{i % 1000:03d}Z"
            if i % match_every == 7:
                f.write(f"{ts} ERROR req={i:08x} {rng.choice(BAD)}\n")
            else:
                f.write(
                    f"{ts} INFO req={i:08x} {' '.join(rng.choices(WORDS, k=10))} "
                    f"{rng.randrange(5000)}ms\n"
                )


def guard_scan(
    path: Path,
    engines: tuple[Engine, ...] = ("hyperscan", "re2"),
    multiline: str = "auto",
    *,
    grouping: bool = True,
) -> tuple[float, int]:
    """Seconds and lines counted by one ``LogfileMonitor.scan``; ``grouping=False`` folds by
    rule (no masking, no template, no redaction of template text): the grouping's cost is the
    difference."""
    spec = LogfileMonitorSpec.model_validate(
        {
            "id": "bench",
            "type": "logfile",
            "path": str(path),
            "start": "beginning",
            "multiline": multiline,
            "rules": [{"kind": f"rule{i}", "pattern": p} for i, p in enumerate(PATTERNS)],
        }
    )
    monitor = LogfileMonitor(spec)
    monitor._matcher = LineMatcher([(p, False) for p in PATTERNS], engines=engines)
    _ = monitor._matcher.engine  # its Hyperscan database built, as a monitor's first long read
    # does once in its life (outside the time, as it was when the constructor built it)
    if not grouping:
        monitor._groupers = [replace(g, group_by="rule", mined=False) for g in monitor._groupers]
    t = time.perf_counter()
    obs = monitor.scan({})
    elapsed = time.perf_counter() - t
    monitor._drop_handle()
    return elapsed, sum(s.count for s in obs.signals)


def grep_count(path: Path, patterns: Path) -> tuple[float, int]:
    t = time.perf_counter()
    out = subprocess.run(
        ["grep", "-E", "-c", "-f", str(patterns), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    return time.perf_counter() - t, int(out.stdout.strip() or 0)


def matched_lines(path: Path) -> list[str]:
    """Every line some rule matches (what the scan groups), in order."""
    matcher, data, lines = LineMatcher([(p, False) for p in PATTERNS]), path.read_bytes(), []
    start = 0
    while start < len(data):  # blocks of whole lines, as the scan reads them
        end = data.rfind(b"\n", start, start + CHUNK) + 1 or len(data)
        lines += [m[1] for m in matcher.scan(data[start:end], 1 << 16)]
        start = end
    return lines


def stage_costs(path: Path, repeat: int) -> dict[str, Any]:
    """What grouping and redaction cost within the scan (``multiline: auto``, Hyperscan)."""
    bare = min(guard_scan(path, grouping=False)[0] for _ in range(repeat))
    whole = min(guard_scan(path)[0] for _ in range(repeat))
    texts = matched_lines(path)
    distinct = list({mask(t): t for t in texts}.values())  # the scan redacts one per masked line
    t = time.perf_counter()
    for text in distinct:
        redact(text)
    as_scanned = time.perf_counter() - t
    t = time.perf_counter()
    for text in texts:
        redact(text)
    every = time.perf_counter() - t
    return {
        "scan_without_grouping": {"seconds": round(bare, 3)},
        "grouping_seconds": round(max(0.0, whole - bare), 3),
        "grouping_share": f"{max(0.0, whole - bare) / whole * 100:.0f} %",
        "redaction_seconds": round(as_scanned, 4),
        "redacted_messages": len(distinct),
        "redaction_every_matched_line_seconds": round(every, 4),
    }


def one(workdir: Path, lines: int, match_every: int, repeat: int) -> dict[str, Any]:
    log, patterns = workdir / "big.log", workdir / "patterns.txt"
    write_log(log, lines, match_every)
    patterns.write_text("\n".join(PATTERNS) + "\n")
    g, n = (1e9, 0), (1e9, 0)
    for _ in range(repeat):  # alternated, so both see the same machine
        g = min(g, guard_scan(log))
        n = min(n, guard_scan(log, multiline="none"))
    r = min(guard_scan(log, ("re2",)) for _ in range(repeat))
    e = min(grep_count(log, patterns) for _ in range(repeat))
    stages = stage_costs(log, repeat)
    size = log.stat().st_size
    log.unlink()
    return {
        "lines": lines,
        "bytes": size,
        "patterns": len(PATTERNS),
        "matching_lines": g[1],
        "grep_matching_lines": e[1],
        "counts_agree": g[1] == e[1] == r[1] == n[1],
        "engine": LineMatcher([(p, False) for p in PATTERNS]).engine,
        "guard": {"seconds": round(g[0], 3), "lines_per_s": round(lines / g[0])},
        "guard_multiline_none": {"seconds": round(n[0], 3), "lines_per_s": round(lines / n[0])},
        "multiline_auto_cost": f"{(g[0] / n[0] - 1) * 100:+.1f} %",
        "guard_re2_only": {"seconds": round(r[0], 3), "lines_per_s": round(lines / r[0])},
        "grep": {"seconds": round(e[0], 3), "lines_per_s": round(lines / e[0])},
        "guard_vs_grep": round(e[0] / g[0], 2),
        "stages": stages,
    }


def run(lines: int = 2_000_000, repeat: int = 2) -> dict[str, Any]:
    if shutil.which("grep") is None:
        return {"status": "skipped: grep not found"}
    grep_version = subprocess.run(
        ["grep", "--version"], capture_output=True, text=True
    ).stdout.splitlines()[0]
    t = time.perf_counter()
    policy()  # built once per process (``guard run`` builds it at its first signal)
    load = time.perf_counter() - t
    with tempfile.TemporaryDirectory(prefix="guard-bench-logscan-") as tmp:
        return {
            "what": "logfile monitor scan vs grep -E -c -f, same file and patterns",
            "grep_version": grep_version,
            "redaction_policy_load_seconds": round(load, 3),
            "one_percent_matching": one(Path(tmp), lines, 100, repeat),
            "one_in_1000_matching": one(Path(tmp), lines, 1000, repeat),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    print(json.dumps({"machine": machine(), "logscan": run(args.lines, args.repeat)}, indent=2))


if __name__ == "__main__":
    main()
