"""The ladder end to end on a real engine, with the skills reviewed in git (a bare remote):
a skill that needs approval heals a fault three times and its promotion is proposed as a
branch; merged, the fourth fault heals with no question; then the fault changes so the fix
no longer works: after two failed verifications the skill is demoted and the human is asked
at once, with the failing runs as the evidence."""

from __future__ import annotations

import json
import shutil
from functools import partial

import pytest
import yaml

from tests.fakes.git import bare_repo, git, reviewer_clone
from tests.helpers.agent import (
    REPO,
    db_rows,
    find,
    guard_process,
    past_flap_window,
    setup_docker_home,
    show,
    wait_for,
)

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]  # four heals, two failures: ~2.5 min

SKILL = "docker-start-exited"
BRANCH = f"guard/promote/{SKILL}"
# every start counts; from the 6th on (the first run and four heals before) it exits at once
BREAKS_AFTER_FIVE_STARTS = (
    "n=$(cat /tmp/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /tmp/n; "
    "[ $n -gt 5 ] && exit 3; sleep 600"
)


def seed_remote(tmp_path):
    """The team's skills repository, holding the starter skill with ``trust: approval``."""
    bare = bare_repo(tmp_path / "srv")
    rita = reviewer_clone(bare, tmp_path / "rita")
    shutil.copytree(REPO / "skills" / SKILL, rita / SKILL)
    spec = yaml.safe_load((rita / SKILL / "skill.yaml").read_text())
    spec["steps"] = [
        {"action": "docker.start", "args": {"container": "{{ incident.target }}"}},
        {"wait": "1s"},
        {"verify": {"timeout": "3s", "interval": "500ms"}},
    ]
    spec["limits"] = {"max_runs": 10, "window": "1h"}
    spec["trust"] = "approval"
    (rita / SKILL / "skill.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    git("add", ".", cwd=rita)
    git("commit", "-q", "-m", "A starter skill, asked for first", cwd=rita)
    git("push", "-q", "origin", "main", cwd=rita)
    return bare, rita


def fault(home, victim, previous=None):
    """Kill ``victim`` once the last incident is past the flap window (a new incident)."""
    if previous is not None:
        wait_for(lambda: past_flap_window(home, previous["id"]), 30, "the flap window")
    victim.kill()


def test_three_heals_propose_a_promotion_merged_it_runs_unasked_then_two_failures_demote(
    home, containers, tmp_path
):
    bare, rita = seed_remote(tmp_path)
    labels = setup_docker_home(home)
    config = yaml.safe_load(home.config.read_text())
    config["skills"].update(git_remote=f"file://{bare}", sync_every="1s")
    home.config.write_text(yaml.safe_dump(config))
    victim = containers.run("victim", BREAKS_AFTER_FIVE_STARTS, labels=labels)
    last = None
    with guard_process(home):
        for n in (1, 2, 3):  # asked each time; an approver approves the skill; it heals
            fault(home, victim, last)
            last = wait_for(partial(find, home, id=n, state="awaiting_human"), 60, f"#{n} asked")
            home.cli("approve", str(n), "--skill", SKILL)
            wait_for(partial(find, home, id=n, state="resolved"), 60, f"#{n} resolved")
        [(step, reason)] = db_rows(home, "select step, reason from skill_ladder")
        assert step == "proposed" and reason.startswith("3 verified recoveries since")
        wait_for(lambda: git("branch", "--list", BRANCH, cwd=bare), 30, "the promotion branch")
        diff = git("diff", f"main..{BRANCH}", cwd=bare)
        assert "-trust: approval" in diff and "+trust: trusted" in diff

        git("fetch", "-q", "origin", cwd=rita)
        git("merge", "--no-ff", "-q", "-m", "Trust it", f"origin/{BRANCH}", cwd=rita)
        git("push", "-q", "origin", "main", cwd=rita)
        wait_for(
            lambda: db_rows(home, "select outcome from skill_ladder") == [("merged",)],
            30,
            "the merge to take effect",
        )

        fault(home, victim, last)  # the fourth: healed with no question
        last = wait_for(lambda: find(home, id=4, state="resolved"), 60, "#4 healed unasked")
        assert not [t for t in show(home, 4)["timeline"] if t["type"] == "asked_human"]

        fault(home, victim, last)  # the fix no longer works: every start exits at once
        fifth = wait_for(lambda: find(home, id=5, state="escalated"), 90, "#5 to go to a human")
        asked = [t for t in show(home, 5)["timeline"] if t["type"] == "asked_human"]
        assert (
            "was demoted to approval after 2 failed verifications in a row"
            in (asked[-1]["message"])
        )
        assert f"run #6 on incident #{fifth['id']}" in asked[-1]["message"]  # the evidence

    runs = db_rows(home, "select incident_id, status, approved_by from remediation_run")
    assert [r[:2] for r in runs] == [
        (1, "verified"),
        (2, "verified"),
        (3, "verified"),
        (4, "verified"),
        (5, "failed"),
        (5, "failed"),
    ]
    audit = db_rows(home, "select action from audit_log where action like 'skill.%'")
    assert [a for (a,) in audit] == [
        "skill.promotion_proposed",
        "skill.promotion_sent",
        "skill.promoted",
        "skill.demoted",
    ]
    listed = json.loads(home.cli("skills", "list", "--json").stdout)
    skill = next(s for s in listed if s["name"] == SKILL)
    assert (skill["trust"], skill["trust_file"]) == ("approval", "trusted")
    assert skill["outcomes"]["verified"] == 4 and skill["outcomes"]["consecutive_failures"] == 2
