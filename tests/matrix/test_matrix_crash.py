"""A real ``guard run`` asking in a room of the real Synapse the tests start is SIGKILLed after
the homeserver took a post or an edit, before Guard recorded it (``bench.crash``'s ``matrix``
scenario, on this session's Synapse); restarted, it posts nothing twice: the room holds exactly
one event of the bot's per outbox row (the question, the report and its chart, the reply)."""

from __future__ import annotations

import pytest

from bench.crash import run_case
from bench.crash_matrix import Matrix
from tests.helpers.synapse import Homeserver


@pytest.mark.parametrize("point", Matrix.points)
def test_a_kill_9_after_synapse_took_a_post_posts_nothing_twice(
    point: str, synapse: Homeserver
) -> None:
    result = run_case(Matrix(synapse), point)
    assert result.crashed, result.error  # killed there
    assert result.green, (result.error, result.checks)
