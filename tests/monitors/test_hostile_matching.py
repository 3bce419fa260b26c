"""Hostile log lines (issue 13, finding 1): matching never stalls the event loop and costs a
bounded time per line; an over-long line is matched on its start and the signal says so;
learned triggers and Railway rules follow the same rules.

The bound asserted is generous (the event loop's longest stall under 0.5 s while lines that
cost Python's ``re`` seconds to minutes are scanned); ``python -m bench.hostile`` measures it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from guard.monitors.logfile import LogfileMonitor
from guard.playbooks.models import LogfileMonitorSpec
from guard.skills.lesson import message_regex
from guard.skills.model import Trigger

pytestmark = pytest.mark.unit

RULES = [
    {"kind": "slow_timeout", "pattern": ".*ERROR.*timeout"},  # cubic in Python's re
    {"kind": "nested", "pattern": "(a+)+$"},  # exponential in Python's re
    {"kind": "folded", "pattern": r"(x+x+)+y\s", "ignore_case": True},  # Unicode-sensitive
    {"kind": "twice", "pattern": r"(\w+) \1 twice"},  # a backreference: Python only
]
HOSTILE = [
    "é " + "ERROR " * 1400,  # 8 KB, not ASCII: no prefilter
    "a" * 40 + "!",  # 2^40 steps for Python's re
    "é" + "x" * 40 + "!",  # Unicode line, ignore-case rule: goes to the Python worker
    "é " + "ab " * 3000 + "twice",  # quadratic for the backreference
]


async def max_stall(work: Awaitable[Any]) -> tuple[Any, float]:
    """Run ``work``; return its result and the event loop's longest stall meanwhile."""
    worst, stop = 0.0, False

    async def tick() -> None:
        nonlocal worst
        while not stop:
            before = time.monotonic()
            await asyncio.sleep(0.01)
            worst = max(worst, time.monotonic() - before - 0.01)

    ticker = asyncio.create_task(tick())
    try:
        result = await work
    finally:
        stop = True
        await ticker
    return result, worst


def _monitor(path: Path, **kw: Any) -> LogfileMonitor:
    return LogfileMonitor(
        LogfileMonitorSpec.model_validate(
            {
                "id": "log",
                "type": "logfile",
                "path": str(path),
                "rules": RULES,
                "start": "beginning",
                **kw,
            }
        )
    )


@pytest.mark.serial  # it measures the event loop's worst stall: alone, not beside 3 other workers
async def test_hostile_lines_never_stall_the_loop_and_a_real_fault_still_counts(
    tmp_path: Path,
) -> None:
    log = tmp_path / "app.log"
    log.write_text("\n".join([*HOSTILE, "2026-12-03 ERROR upstream timeout", ""]))
    monitor = _monitor(log)
    obs, stall = await max_stall(monitor.check({}))
    assert stall < 0.5, f"the event loop stalled {stall:.2f}s"
    kinds = {s.kind: s for s in obs.signals}
    assert kinds["slow_timeout"].message == "2026-12-03 ERROR upstream timeout"
    assert "nested" not in kinds and "twice" in kinds  # Python's answers, as before
    assert monitor._matcher.timeouts >= 1  # the Unicode x+x+ line was abandoned, not waited on


async def test_an_over_long_line_is_matched_on_its_start_and_says_so(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_text("ERROR timeout " + "é" * 200_000 + " twice twice twice\nshort ERROR timeout\n")
    obs, _ = await max_stall(_monitor(log, max_line_bytes=4096).check({}))
    (cut, plain) = sorted(obs.signals, key=lambda s: len(s.message), reverse=True)
    assert cut.kind == "slow_timeout" and cut.details["line_cut_at_bytes"] == 4096
    assert "line_cut_at_bytes" not in plain.details


async def test_learned_triggers_cost_linear_time_on_hostile_messages() -> None:
    trigger = Trigger(
        message=message_regex(
            "2026-12-03T10:00:00Z req 89bbae50 from 10.0.0.1 took 35ms: too many clients"
        )
    )
    hostile = SimpleNamespace(
        source="x", kind="k", target="t", message="2026-12-03T10:00:00Z req " + "1 " * 50_000
    )

    async def match() -> Any:
        return trigger.match(hostile)  # on the loop, as the agent's recall does

    started = time.monotonic()
    found, _ = await max_stall(match())
    assert found is None and time.monotonic() - started < 0.5
