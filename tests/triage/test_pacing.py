"""Triage's pacing: the first signal of a quiet spell is never held back; a storm is paced."""

from __future__ import annotations

import pytest

from guard.util.pacing import Pace

pytestmark = pytest.mark.unit


def go(pace: Pace, now: float) -> float:
    """Start a transaction as the intake does; return how long it had to wait."""
    wait = pace.wait(now)
    pace.spend(now + wait)
    return wait


def test_after_a_quiet_spell_a_transaction_right_after_another_goes_at_once() -> None:
    pace = Pace(every=0.05, burst=3, now=0.0)
    assert go(pace, 10.0) == 0  # a passing check's batch
    assert go(pace, 10.001) == 0  # a kill's die one millisecond later: not held back


def test_a_steady_stream_is_held_to_one_transaction_per_interval() -> None:
    pace = Pace(every=0.05, burst=3, now=0.0)
    now, waits = 10.0, []
    for _ in range(10):
        wait = go(pace, now)
        waits.append(wait)
        now += wait + 0.001  # the next batch is ready as soon as this one is stored
    assert waits[:3] == [0, 0, 0]  # the burst
    assert all(w == pytest.approx(0.05 - 0.001, abs=1e-3) for w in waits[4:])
    assert (now - 10.0) / 10 >= 0.03  # on average close to one per interval, not one per ms


def test_the_burst_comes_back_after_a_quiet_spell_of_burst_intervals() -> None:
    pace = Pace(every=0.05, burst=3, now=0.0)
    for i in range(3):
        go(pace, 10.0 + i * 0.001)
    assert pace.wait(10.003) > 0  # spent
    assert pace.wait(10.003 + 3 * 0.05) == 0
