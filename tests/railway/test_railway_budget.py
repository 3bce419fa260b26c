"""Railway's rate budget: the shared limiter's pacing, and check-config's estimate."""

from __future__ import annotations

import time
from typing import cast

import pytest

from guard.config import Settings
from guard.domain.exceptions import RailwayError
from guard.playbooks.models import Playbook, RailwayMonitorSpec
from guard.railway.budget import Limiter, railway_budget_warnings, requests_per_check
from guard.railway.cursor import LogCursor, normalise
from guard.railway.models import LogLine


def railway_book(*monitors: tuple[str, str, bool]) -> Playbook:
    return Playbook.model_validate(
        {
            "name": "rw",
            "monitors": [
                {
                    "id": mid,
                    "type": "railway",
                    "service": "api",
                    "every": every,
                    **({"rules": [{"kind": "boom", "pattern": "boom"}]} if rules else {}),
                }
                for mid, every, rules in monitors
            ],
        }
    )


def test_estimate_counts_every_and_requests_per_check():
    book = railway_book(("a", "10s", True), ("b", "30s", False))
    assert requests_per_check(cast(RailwayMonitorSpec, book.monitors[0])) == 2  # status + logs
    [warning] = railway_budget_warnings(Settings(), [book])
    # a: 360 checks/h x 2 = 720; b: 120 x 1 = 120 -> 840 of 1000 (84%)
    assert "about 840 requests/hour" in warning and "84%" in warning
    over = railway_book(("a", "5s", True), ("b", "30s", False))
    [warning] = railway_budget_warnings(Settings(), [over])
    assert "1560 requests/hour" in warning and "over railway.max_requests_per_hour=1000" in warning
    assert railway_budget_warnings(Settings(), [railway_book(("a", "60s", True))]) == []


def test_check_config_prints_budget_warnings_to_stderr_and_still_succeeds(home):
    home.playbook(
        "rw",
        [
            {
                "id": "hot",
                "type": "railway",
                "service": "api",
                "every": "2s",
                "rules": [{"kind": "boom", "pattern": "boom"}],
            }
        ],
    )
    proc = home.cli("check-config")
    assert proc.returncode == 0 and "config ok" in proc.stdout
    assert "warning: railway monitors need about 3600 requests/hour (hot 3600/h)" in proc.stderr
    print(proc.stderr)


async def test_limiter_spaces_requests_per_second():
    limiter = Limiter(per_hour=1_000_000, per_second=20)
    started = time.monotonic()
    for _ in range(11):
        await limiter.acquire()
    elapsed = time.monotonic() - started
    print(f"11 requests at <=20/s took {elapsed:.3f}s")
    assert elapsed >= 0.45


async def test_limiter_never_exceeds_the_hourly_budget():
    limiter = Limiter(per_hour=100, per_second=1000, max_wait=0.5)
    sent = 0
    with pytest.raises(RailwayError, match="budget is exhausted"):
        for _ in range(100):
            await limiter.acquire()
            sent += 1
    # A burst of 10, then one every 3600/90 = 40s: within any hour, at most 10 + 90 = 100.
    assert sent == 10
    assert limiter.hourly.rate * 3600 + limiter.hourly.capacity == pytest.approx(100)


async def test_retry_after_pauses_every_caller():
    limiter = Limiter(per_hour=1_000_000, per_second=1000)
    limiter.pause(0.3)
    started = time.monotonic()
    await limiter.acquire()
    assert time.monotonic() - started >= 0.29


def test_cursor_normalises_and_dedups_same_timestamp_lines():
    assert normalise("2026-12-02T18:06:00.5+01:00") == "2026-12-02T17:06:00.500000000Z"
    assert normalise("2026-12-02T18:06:00Z") == "2026-12-02T18:06:00.000000000Z"
    line = lambda ts, msg: LogLine(timestamp=ts, message=msg)  # noqa: E731
    cur = LogCursor("d1")
    t = "2026-12-02T18:06:00.000000001Z"
    assert [x.message for x in cur.advance([line(t, "a"), line(t, "a"), line(t, "b")])] == [
        "a",
        "a",
        "b",
    ]
    # Asked again from t: the same three come back plus a new "a" at t and a later line.
    again = [
        line(t, "a"),
        line(t, "a"),
        line(t, "b"),
        line(t, "a"),
        line("2026-12-02T18:06:00.000000002Z", "c"),
        line("2026-12-02T18:05:00Z", "old"),
    ]
    assert [x.message for x in cur.advance(again)] == ["a", "c"]
    assert cur.timestamp == "2026-12-02T18:06:00.000000002Z"
    assert LogCursor.from_state(cur.as_state(), "d2") is None  # another deployment: fresh
