"""``python -m bench --compare``: the quick profile of every benchmark beside the recorded figures.

Each benchmark runs once with small inputs (a few kills, half a million log lines, the
in-process grouping replay, a short scale window) and gives the figures that matter, as ratios
to the anchor measured in the same run wherever the benchmark has one (a bare ``docker
restart``, a bare events subscriber, grep). Each figure is printed beside the one recorded in
the "Recorded figures" table of docs/BENCHMARKS.md, and a change for the worse of more than
``TOLERANCE`` is flagged ``REGRESSION``. Figures are read from that table, so recording a new
baseline is editing the docs; nothing here asserts anything (``--strict`` exits 1 on a flag,
for a person who wants it).

``--runs N`` repeats each benchmark N times and gives each figure's median (compared) with its
min and max; ``--load both`` (the default) runs the profile quiet, then beside a steady
background load of two busy processes (``bench.load``), and prints a table for each, with the
load average seen: a ratio that holds only on an idle machine is not a ratio a VPS sees.
"""

from __future__ import annotations

import asyncio
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import REPO
from bench.load import background_load, load_average

TOLERANCE = 0.15
DOC = REPO / "docs" / "BENCHMARKS.md"
HEADING = "## Recorded figures"
_ROW = re.compile(r"^\|\s*`?([a-z0-9_.]+)`?\s*\|\s*([-+0-9.eE]+)\s*\|\s*(lower|higher)\s*\|")


@dataclass(frozen=True)
class Recorded:
    value: float
    better: str  # "lower" or "higher"


@dataclass(frozen=True)
class Row:
    key: str
    now: float | None  # the median of the runs
    recorded: Recorded | None
    low: float | None = None  # the runs' min and max (None: one run)
    high: float | None = None

    @property
    def change(self) -> float | None:
        """How much worse (positive) or better (negative) than recorded, as a fraction."""
        if self.now is None or self.recorded is None or self.recorded.value == 0:
            return None
        ratio = self.now / self.recorded.value
        return ratio - 1 if self.recorded.better == "lower" else 1 / ratio - 1 if ratio else None

    @property
    def regression(self) -> bool:
        change = self.change
        return change is not None and change > TOLERANCE


def recorded_figures(doc: Path = DOC) -> dict[str, Recorded]:
    """The rows of the "Recorded figures" table: ``| key | value | lower/higher | ...``."""
    figures: dict[str, Recorded] = {}
    inside = False
    for line in doc.read_text().splitlines():
        if line.startswith("## "):
            inside = line.startswith(HEADING)
            continue
        m = _ROW.match(line) if inside else None
        if m:
            figures[m.group(1)] = Recorded(float(m.group(2)), m.group(3))
    return figures


def _get(report: Any, *path: str) -> float | None:
    for key in path:
        if not isinstance(report, dict) or key not in report:
            return None
        report = report[key]
    return float(report) if isinstance(report, int | float) else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def _detection() -> dict[str, float | None]:
    from bench import detection

    r = asyncio.run(detection.run(5))
    p50 = _get(r, "events_stream", "p50")
    bare = _get(r, "bare_sdk_subscriber_die", "p50")
    storm: dict[str, Any] = next(
        (v for k, v in r.items() if k.startswith("events_stream_during_")), {}
    )
    p95 = _get(storm, "p95")
    return {
        "detection.p50_ms": p50 * 1000 if p50 is not None else None,
        "detection.p50_ratio": _ratio(p50, bare),
        "detection.storm_p95_ms": p95 * 1000 if p95 is not None else None,
    }


def _mttr() -> dict[str, float | None]:
    from bench import mttr

    r = asyncio.run(mttr.run(4))
    guard, bare = r.get("guard_trusted_skill", {}), r.get("bare_docker_restart", {})
    return {
        "mttr.p50_ratio": _ratio(_get(guard, "p50"), _get(bare, "p50")),
        "mttr.p95_ratio": _ratio(_get(guard, "p95"), _get(bare, "p95")),
    }


def _logscan() -> dict[str, float | None]:
    from bench import logscan

    r = logscan.run(500_000, repeat=1)
    cost = r.get("one_percent_matching", {}).get("multiline_auto_cost")
    return {
        "logscan.vs_grep_1pct": _get(r, "one_percent_matching", "guard_vs_grep"),
        "logscan.vs_grep_0.1pct": _get(r, "one_in_1000_matching", "guard_vs_grep"),
        "logscan.multiline_auto_cost_pct": float(cost.split()[0]) if cost else None,
    }


def _grouping() -> dict[str, float | None]:
    from bench import grouping

    r = grouping.run(guard_run=False)
    return {
        "grouping.mean_accuracy_all": _get(r, "mean", "all_systems", "accuracy"),
        "grouping.cost_us_per_line": _get(r, "mean", "cost_us_per_line"),
    }


def _redaction() -> dict[str, float | None]:
    from bench import redaction

    r = redaction.run(seeds=4, lines=2000)
    return {"redaction.us_per_clean_line": _get(r, "guard", "us_per_clean_line")}


def _storm() -> dict[str, float | None]:
    from bench import storm

    r = storm.run(lines=20_000, seconds=3.0)
    return {
        "storm.telegram_messages": _get(r, "telegram_messages"),
        "storm.rss_mb_peak": _get(r, "rss_mb_peak"),
    }


def _store() -> dict[str, float | None]:
    from bench import store

    r = store.run(incidents=20_000)
    median = _get(r, "cli", "guard incidents list", "median_s")
    return {"store.cli_incidents_list_ms_20k": median * 1000 if median is not None else None}


def _web() -> dict[str, float | None]:
    from bench import web

    r = web.run_size(20_000, 20)
    return {"web.overview_ms_20k": _get(r, "overview", "median_ms")}


PROFILE: tuple[tuple[str, Callable[[], dict[str, float | None]]], ...] = (
    ("detection", _detection),
    ("mttr", _mttr),
    ("logscan", _logscan),
    ("grouping", _grouping),
    ("redaction", _redaction),
    ("storm", _storm),
    ("store", _store),
    ("web", _web),
)


def measure(only: set[str] | None = None) -> Iterator[tuple[str, dict[str, float | None], float]]:
    """Each benchmark of the quick profile: its name, its figures, the seconds it took."""
    for name, run in PROFILE:
        if only and name not in only:
            continue
        started = time.monotonic()
        try:
            figures = run()
        except Exception as exc:  # one broken benchmark must not hide the others
            print(f"  {name}: failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            figures = {}
        yield name, figures, time.monotonic() - started


def summarise(runs: list[dict[str, float | None]], recorded: dict[str, Recorded]) -> list[Row]:
    """One row per figure: the median of the runs that gave it, with their min and max."""
    keys = list(dict.fromkeys(k for run in runs for k in run))
    rows = []
    for key in keys:
        values = sorted(v for run in runs if (v := run.get(key)) is not None)
        if not values:
            rows.append(Row(key, None, recorded.get(key)))
            continue
        spread = (values[0], values[-1]) if len(runs) > 1 else (None, None)
        rows.append(Row(key, statistics.median(values), recorded.get(key), *spread))
    return rows


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"


def render(rows: list[Row]) -> str:
    spread = any(r.low is not None for r in rows)
    extra = f" {'min':>9} {'max':>9}" if spread else ""
    out = [f"{'figure':<36} {'now':>9}{extra} {'recorded':>9} {'change':>8}  flag"]
    for row in rows:
        change = row.change
        shown = "n/a" if change is None else f"{-change * 100:+.0f} %"
        flag = "REGRESSION" if row.regression else "" if change is not None else "(not recorded)"
        rec = _fmt(row.recorded.value) if row.recorded else "n/a"
        lows = f" {_fmt(row.low):>9} {_fmt(row.high):>9}" if spread else ""
        out.append(f"{row.key:<36} {_fmt(row.now):>9}{lows} {rec:>9} {shown:>8}  {flag}")
    return "\n".join(out)


LOADS = {"quiet": 0, "loaded": 2}  # busy background processes


def profile(
    only: set[str] | None, runs: int, busy: int
) -> tuple[list[dict[str, float | None]], list[float]]:
    """The quick profile ``runs`` times beside ``busy`` spinning processes: each run's figures,
    and the load average after each benchmark."""
    found: list[dict[str, float | None]] = []
    loads: list[float] = []
    with background_load(busy):
        for i in range(runs):
            figures: dict[str, float | None] = {}
            for name, got, seconds in measure(only):
                loads.append(load_average())
                print(f"  {name} (run {i + 1}/{runs}): {seconds:.0f} s", file=sys.stderr)
                figures.update(got)
            found.append(figures)
    return found, loads


def main(
    only: set[str] | None = None, strict: bool = False, runs: int = 1, load: str = "quiet"
) -> int:
    recorded = recorded_figures()
    flagged: list[str] = []
    for condition in LOADS if load == "both" else (load,):
        busy = LOADS[condition]
        found, loads = profile(only, runs, busy)
        rows = summarise(found, recorded)
        seen = f"load average {min(loads, default=0):.1f}-{max(loads, default=0):.1f}"
        print(f"\n{condition} ({busy} busy processes, {runs} run(s), {seen})")
        print(render(rows))
        flagged += [f"{r.key} ({condition})" for r in rows if r.regression]
    print(
        f"{len(flagged)} regression(s) over {TOLERANCE:.0%}: {', '.join(flagged)}"
        if flagged
        else f"no regression over {TOLERANCE:.0%} against docs/BENCHMARKS.md"
    )
    return 1 if strict and flagged else 0
