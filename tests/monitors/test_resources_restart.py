"""``type: resources`` across a restart of Guard: the checks a level has been held for and each
trend's samples are the monitor's state (persisted with its signals), so a leak watched for
minutes is predicted on the first check after a restart instead of after a new window."""

from __future__ import annotations

import json
from typing import Any

import pytest

from guard.domain.records import Signal
from guard.monitors.resources import KEPT, ResourcesMonitor
from guard.monitors.usage import Sample
from tests.monitors.test_resources import MiB, memory, spec

pytestmark = pytest.mark.unit

TREND = {"selector": {"name": "app"}, "trend": {"window": "10m", "within": "30m"}}


def firing(signals: list[Signal]) -> list[Signal]:
    return [s for s in signals if s.status == "firing"]


def leak(i: int) -> Sample:
    """2 MB/s from 100 MiB under a 1 GiB limit, sampled every 15 s."""
    return memory(100 + 2e6 * 15 * i / MiB, 1024)


def restarted(state: dict[str, Any], **fields: Any) -> ResourcesMonitor:
    """A new monitor (a new Guard process) given the state the old one left in the store."""
    monitor = ResourcesMonitor(spec(**fields))
    monitor.restore(json.loads(json.dumps(state)))  # as stored: JSON
    return monitor


def test_a_trend_goes_on_after_a_restart() -> None:
    before = ResourcesMonitor(spec(**TREND))
    for i in range(10):  # 135 s of samples: not yet a quarter of the window
        assert firing(before.judge([leak(i)], 1_000.0 + 15 * i)) == []
    after = restarted(before.memo(), **TREND)
    [fired] = firing(after.judge([leak(10)], 1_150.0))
    assert fired.message == (
        "memory 386 MiB of 1024 MiB (38 %), rising 2.0 MB/s: reaches the limit in 6 min"
    )
    fresh = ResourcesMonitor(spec(**TREND))  # what a restart did before: a new window
    assert firing(fresh.judge([leak(10)], 1_150.0)) == []


def test_a_level_held_before_a_restart_keeps_its_count() -> None:
    fields = {"selector": {"name": "app"}, "memory": {"above": "90%", "for": 3}}
    before = ResourcesMonitor(spec(**fields))
    for t in (0.0, 1.0):
        assert firing(before.judge([memory(480)], t)) == []
    [fired] = firing(restarted(before.memo(), **fields).judge([memory(480)], 2.0))
    assert fired.message.endswith("above 90 % on 3 checks")


def test_the_state_is_bounded_and_samples_older_than_the_window_are_dropped() -> None:
    before = ResourcesMonitor(spec(**TREND))
    for i in range(200):  # 200 checks 3 s apart: 10 min
        before.judge([leak(i // 5)], 3.0 * i)
    [[target, metric, points]] = before.memo()["trends"]
    assert (target, metric) == ("app", "memory") and len(points) <= KEPT
    assert points[-1][0] == 3.0 * 199  # the newest sample is kept
    later = restarted(before.memo(), **TREND)
    later.judge([leak(40)], 3.0 * 199 + 3600)  # an hour later: the old samples left the window
    assert [len(p) for _, _, p in later.memo()["trends"]] == [1]


async def test_check_resumes_from_the_stored_state_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """``check`` (what the runner calls) restores on its first call and returns its memo."""
    before = ResourcesMonitor(spec(**TREND))
    now = 1_000.0
    for i in range(10):
        before.judge([leak(i)], now - 15 * (10 - i))
    after = ResourcesMonitor(spec(**TREND))
    monkeypatch.setattr(after, "_sample", lambda: [leak(10)])  # the engine's stats, given
    monkeypatch.setattr("guard.monitors.resources.time.time", lambda: now)
    observed = await after.check(json.loads(json.dumps(before.memo())))
    assert [s.kind for s in firing(observed.signals)] == ["memory_high"]
    assert observed.state["trends"][0][2][-1] == [now, leak(10).readings["memory"].used]
