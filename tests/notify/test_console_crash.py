"""The console is a channel of the outbox: a real ``guard run`` with no chat channel asks on
its console (the log), and is SIGKILLed after the console wrote a message, before the outbox
recorded it (``bench.crash``'s ``console`` scenario); restarted, it prints the question once,
and the closing edit (the incident healed) once."""

from __future__ import annotations

import pytest

from bench.crash import run_case
from bench.crash_console import Console


@pytest.mark.parametrize("point", Console.points)
def test_a_kill_9_after_the_console_wrote_a_message_writes_nothing_twice(point: str) -> None:
    result = run_case(Console(), point)
    assert result.green, (result.error, result.checks)  # killed there, and every check green
