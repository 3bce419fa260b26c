"""Where the time of one kill goes: ``guard.harness.spans`` marks, summed up per step.

``steps(marks, kills)`` takes what ``guard.harness.spans.recording()`` recorded and, per kill (a
container name and the monotonic time it was killed), the first time each point was reached
after the kill (for ``verify.check`` the last one before the incident resolved, and how many
checks ran). It returns, per point, the p50/p95/max of the time since the kill and of the step
from the point before it.
"""

from __future__ import annotations

from typing import Any

from bench.common import percentiles
from guard.harness.spans import SPANS, Mark


def _per_kill(marks: list[Mark], name: str, t0: float) -> dict[str, float]:
    seen: dict[str, float] = {}
    checks = 0
    for point, key, at in sorted(marks, key=lambda m: m[2]):
        if key != name or at < t0 or "resolved" in seen:
            continue
        if point == "verify.check":
            checks += 1
            seen[point] = at  # the last check before it resolved
        elif point not in seen:
            seen[point] = at
    found = {p: round((seen[p] - t0) * 1000, 1) for p in SPANS if p in seen}
    if checks:
        found["verify.checks"] = checks
    return found


def steps(marks: list[Mark], kills: dict[str, float]) -> dict[str, Any]:
    """Per point: ms since the kill and ms since the previous point (p50, p95, max, n)."""
    rows = [_per_kill(marks, name, t0) for name, t0 in kills.items()]
    table: dict[str, Any] = {}
    previous: str | None = None
    for point in SPANS:
        since = [r[point] for r in rows if point in r]
        if not since:
            continue
        step = [r[point] - r[previous] for r in rows if point in r and previous in r]
        table[point] = {
            "ms_since_kill": percentiles(since),
            "ms_step": percentiles(step) if step else None,
        }
        previous = point
    checks = [r["verify.checks"] for r in rows if "verify.checks" in r]
    if checks:
        table["verify.checks"] = {"p50": sorted(checks)[len(checks) // 2], "max": max(checks)}
    return table
