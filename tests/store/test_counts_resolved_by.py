"""How a resolved incident counts when a person ended it with `guard resolve` (or the console,
MCP, Telegram): no remedy ran, so it is not "healed by a skill" (found by tests/flows: the
daily report counted a console resolve as a skill's heal)."""

from __future__ import annotations

import pytest

from guard.reports.counts import HUMAN, RECOVERED, SKILL, healed_by
from guard.store.models import HUMAN_FIX

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("actor", ["cli:root", "token:ops", "telegram:42", "mcp:agent"])
def test_an_incident_a_person_resolved_counts_as_recovered_not_as_a_skill(actor: str) -> None:
    assert healed_by({"resolved_by": actor}) == RECOVERED


def test_what_a_remedy_resolved_still_counts_by_the_remedy() -> None:
    assert healed_by({"resolved_by": "docker-start-exited"}) == SKILL
    assert healed_by({"resolved_by": HUMAN_FIX}) == HUMAN
    assert healed_by({"resolved_by": "learned-x", "learned_skill": "learned-x"}) == HUMAN
    assert healed_by({"healed_by": "skill", "resolved_by": "cli:root"}) == SKILL
    assert healed_by({}) == RECOVERED
