"""The event-loop watchdog names what holds the loop, once per stall."""

from __future__ import annotations

import asyncio
import time

import pytest
from loguru import logger

from guard.app.stalls import StallWatch
from guard.telemetry import metrics

pytestmark = pytest.mark.unit


def _blocking_culprit(seconds: float) -> None:
    time.sleep(seconds)  # a blocking call on the loop: what the watchdog must point at


async def test_a_stalled_loop_is_logged_with_the_stack_that_holds_it() -> None:
    seen: list[str] = []
    sink = logger.add(lambda m: seen.append(str(m)), level="WARNING")
    watch = StallWatch(0.3)
    stop = asyncio.Event()
    task = asyncio.create_task(watch.run(stop))
    try:
        await asyncio.sleep(0.2)  # ticking: no stall
        assert watch.stalls == 0
        _blocking_culprit(1.2)
        await asyncio.sleep(0.3)
        _blocking_culprit(1.2)  # a second stall is a second report
        await asyncio.sleep(0.1)
    finally:
        stop.set()
        await task
        logger.remove(sink)
    assert watch.stalls == 2
    reports = [m for m in seen if "the event loop has not run for" in m]
    assert len(reports) == 2
    assert all("_blocking_culprit" in m for m in reports)
    # and the worst tick, in /metrics
    stall = metrics.REGISTRY.get_sample_value("guard_event_loop_max_stall_seconds")
    assert stall is not None and stall >= 1.0
