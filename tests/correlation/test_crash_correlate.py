"""``python -m bench.crash --only correlate``: a kill while a signal joins its root loses no
line, joins none twice and opens no second incident (a real ``guard run``, SIGKILLed)."""

from __future__ import annotations

import pytest

from bench.crash import run_case, scenarios


@pytest.mark.parametrize("point", ["triage.correlated", "triage.signal_stored:4"])
def test_a_kill_while_a_signal_joins_loses_nothing_and_joins_nothing_twice(point: str) -> None:
    result = run_case(scenarios()["correlate"], point)
    assert result.crashed, result.error
    assert not result.error, result.error
    red = {name: why for name, (ok, why) in result.checks.items() if ok is False}
    assert not red, red
