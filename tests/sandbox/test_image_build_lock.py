"""The test images' build lock (``tests.helpers.images``): time spent waiting for a shared image
build, or building it, is not the test's; its timeout runs on afterwards with what was left."""

from __future__ import annotations

import signal
import time

import pytest

from tests.helpers.images import build_lock

pytestmark = pytest.mark.unit


@pytest.mark.timeout(2)
def test_a_build_longer_than_the_test_s_timeout_does_not_end_the_test() -> None:
    before, _ = signal.getitimer(signal.ITIMER_REAL)
    assert 0 < before <= 2  # pytest-timeout's alarm is armed for this test
    with build_lock("unit-test"):
        time.sleep(2.5)  # an image built for longer than the test may run
        assert signal.getitimer(signal.ITIMER_REAL)[0] == 0  # paused
    left, _ = signal.getitimer(signal.ITIMER_REAL)
    assert 0 < left <= before  # armed again with what was left, not reset
