"""The trend fit: a least-squares line that says when a rising metric reaches its limit."""

from __future__ import annotations

import pytest

from guard.monitors.trend import MAX_SAMPLES, Samples, fit, human_duration

pytestmark = pytest.mark.unit


def test_a_steady_rise_predicts_the_time_to_the_limit() -> None:
    samples = Samples(window=600)
    for i in range(10):  # 2 MB/s, sampled every 30 s, from 100 MB
        samples.add(1_000_000 + 30 * i, 100e6 + 2e6 * 30 * i)
    line = samples.fit()
    assert line is not None and line.slope == pytest.approx(2e6)
    # the last sample is at 640 MB: 1 GB is 360 MB away at 2 MB/s
    assert samples.time_to(1e9) == pytest.approx(180.0)


def test_noise_around_a_rise_still_fits_the_rise() -> None:
    points = [(float(t), 10.0 * t + (5 if t % 2 else -5)) for t in range(40)]
    line = fit(points)
    assert line is not None and line.slope == pytest.approx(10.0, rel=0.02)


def test_flat_falling_and_too_few_samples_predict_nothing() -> None:
    flat, falling, few = Samples(600), Samples(600), Samples(600)
    for i in range(10):
        flat.add(i * 30, 50.0)
        falling.add(i * 30, 50.0 - i)
    for i in range(3):
        few.add(i * 30, 10.0 * i)
    assert flat.time_to(100) is None
    assert falling.time_to(100) is None
    assert few.time_to(100) is None


def test_samples_must_span_a_quarter_of_the_window() -> None:
    samples = Samples(window=600)
    for i in range(10):  # 10 samples within 9 s of a 10 min window: a burst, not a trend
        samples.add(float(i), float(i))
    assert samples.fit() is None
    samples.add(200.0, 200.0)
    assert samples.fit() is not None


def test_old_samples_leave_the_window_and_memory_is_bounded() -> None:
    samples = Samples(window=60)
    for i in range(1000):
        samples.add(float(i), float(i))
    assert len(samples) <= 61
    unbounded = Samples(window=10**9)
    for i in range(1000):
        unbounded.add(float(i), float(i))
    assert len(unbounded) == MAX_SAMPLES


def test_a_limit_already_passed_is_reached_now_and_a_clock_going_back_restarts() -> None:
    samples = Samples(window=600)
    for i in range(8):
        samples.add(i * 30.0, 100.0 + i)
    assert samples.time_to(50.0) == 0.0
    samples.add(0.0, 1.0)
    assert len(samples) == 1


def test_durations_read_as_a_person_would_say_them() -> None:
    assert human_duration(50) == "50 s"
    assert human_duration(14 * 60) == "14 min"
    assert human_duration(2 * 3600) == "2 h"
    assert human_duration(3 * 86400) == "3 d"
