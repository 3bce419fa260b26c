"""A real ``guard run`` asking in Slack (the local Slack: Web API and Socket Mode) is SIGKILLed
after Slack took a post or an edit, before Guard recorded it (``bench.crash``'s ``slack``
scenario); restarted, it posts nothing twice: Slack received each outbox row's post exactly
once (the question, the report, the outcome in the thread), and the closing edit is made."""

from __future__ import annotations

import pytest

from bench.crash import run_case
from bench.crash_slack import Slack


@pytest.mark.parametrize("point", Slack.points)
def test_a_kill_9_after_slack_took_a_post_posts_nothing_twice(point: str) -> None:
    result = run_case(Slack(), point)
    assert result.crashed, result.error  # killed there
    assert result.green, (result.error, result.checks)
