"""The ladder's automatic step down, on a real engine: a trusted skill that stops working is
demoted after ``skills.demote_after`` failed verifications, and the next fault, on another
container, goes to a human at once with the evidence (the breaker is per target; this is not).
"""

from __future__ import annotations

import json
import time

import pytest

from tests.helpers.agent import (
    FAILS_AFTER_FIRST_START,
    db_rows,
    find,
    guard_process,
    quick_start_home,
    show,
    wait_for,
)

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]  # slow on a loaded machine


def test_a_trusted_skill_that_fails_twice_is_demoted_and_the_next_fault_asks_at_once(
    home, containers
):
    labels = quick_start_home(home)
    first = containers.run("first", FAILS_AFTER_FIRST_START, labels=labels)
    second = containers.run("second", FAILS_AFTER_FIRST_START, labels=labels)
    with guard_process(home):
        first.kill()
        inc = wait_for(
            lambda: find(home, target=first.name, state="escalated"), 90, "the first to escalate"
        )
        runs = db_rows(home, "select id, status from remediation_run order by id")
        assert runs == [(1, "failed"), (2, "failed")]
        ladder = db_rows(home, "select skill, step, runs, closed_at from skill_ladder")
        assert ladder == [("docker-start-exited", "demoted", "[1, 2]", None)]
        timeline = show(home, inc["id"])["timeline"]
        demoted = [t for t in timeline if t["type"] == "skill_demoted"]
        assert demoted and "after 2 failed verifications in a row" in demoted[0]["message"]
        asked = [t for t in timeline if t["type"] == "asked_human"][-1]["message"]
        assert "demoted to approval" in asked and f"run #2 on incident #{inc['id']}" in asked

        second.kill()  # another container: the breaker never saw it, the demotion holds
        other = wait_for(
            lambda: find(home, target=second.name, state="awaiting_human"), 60, "the question"
        )
        asked = [t for t in show(home, other["id"])["timeline"] if t["type"] == "asked_human"]
        assert "demoted to approval after 2 failed verifications" in asked[-1]["message"]
        time.sleep(3)  # nothing runs it unasked
        assert len(db_rows(home, "select id from remediation_run")) == 2

    audit = db_rows(home, "select action, subject from audit_log where action like 'skill.%'")
    assert audit == [("skill.demoted", "skill:docker-start-exited")]
    listed = json.loads(home.cli("skills", "list", "--json").stdout)
    skill = next(s for s in listed if s["name"] == "docker-start-exited")
    assert (skill["trust"], skill["trust_file"]) == ("approval", "trusted")
    assert skill["demoted"].startswith("skill docker-start-exited was demoted to approval")
    assert skill["outcomes"]["failed"] == 2 and skill["outcomes"]["consecutive_failures"] == 2
    assert skill["review"] == "direct" and skill["stale"] is False  # the old fields stay
