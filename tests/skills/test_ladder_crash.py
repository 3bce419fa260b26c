"""Crash safety of the ladder (``bench.crash``'s ``demotion`` scenario, one case; all three
with ``python -m bench.crash --only demotion``): Guard is SIGKILLed between the demotion and
its audit entry, inside the failing verdict's transaction; after the restart there are two
failed runs, one demotion naming both, and an intact audit chain."""

from __future__ import annotations

import pytest

from bench.crash import run_case, scenarios
from tests.reliability.test_crash_matrix import assert_green

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]


def test_a_kill_during_a_demotion_leaves_the_counts_and_the_trust_right():
    result = run_case(scenarios()["demotion"], "ladder.step")
    assert_green(result)
    assert result.checks["one demotion"][0] and result.checks["two verdicts"][0]
