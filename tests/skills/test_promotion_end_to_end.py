"""The ladder end to end on a real engine, with the skills in git (a bare remote, learned
commits pushed directly): a skill that needs approval heals a fault three times and its
promotion is proposed as a branch; merged, the fourth fault heals with no question; then the
fault changes so the fix no longer works (a bad deploy: the new image exits at once): after
two failed verifications the skill is demoted and the human is asked at once, with the failing
runs as the evidence; the human's fix (a rollback) becomes revision 2 of the same skill, which
heals the next bad deploy once approved (a revision starts at approval)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from functools import partial

import pytest
import yaml

from tests.actions.test_docker_rollback import version_image
from tests.fakes.git import bare_repo, git, reviewer_clone
from tests.helpers.agent import (
    REPO,
    db_rows,
    find,
    guard_process,
    incidents,
    past_flap_window,
    setup_docker_home,
    show,
    wait_for,
)

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]  # six incidents: ~4 min

SKILL = "docker-start-exited"
BRANCH = f"guard/promote/{SKILL}"
# the service: version 1 runs; version 2 (a bad deploy) exits at once
SERVICE = '[ "$VERSION" = 2 ] && exit 3; sleep 600'


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
    home, docker_client, busybox_image, tmp_path
):
    bare, rita = seed_remote(tmp_path)
    labels = setup_docker_home(home)
    config = yaml.safe_load(home.config.read_text())
    config["skills"].update(git_remote=f"file://{bare}", sync_every="1s", review="direct")
    home.config.write_text(yaml.safe_dump(config))
    book = home.playbooks / "containers.yaml"  # polled: each poll notes the images it sees,
    spec = yaml.safe_load(book.read_text())  # so docker.rollback knows the one before v2
    spec["monitors"][0]["every"] = "1s"
    book.write_text(yaml.safe_dump(spec, sort_keys=False))
    name = f"guard-test-{os.getpid()}-ladder-victim"
    repo = name.replace("-", "")
    v1, v2 = (version_image(docker_client, busybox_image, repo, v) for v in ("1", "2"))

    def deploy(image: str):
        with contextlib.suppress(Exception):
            docker_client.containers.get(name).remove(force=True)
        return docker_client.containers.run(
            image,
            ["sh", "-c", SERVICE],
            name=name,
            detach=True,
            labels={"guard.test": "1", **labels},
            network_mode="none",
        )

    try:
        ladder_then_revision(home, bare, rita, deploy, v1, v2, name)
    finally:
        with contextlib.suppress(Exception):
            docker_client.containers.get(name).remove(force=True)
        for image in (v1, v2):
            with contextlib.suppress(Exception):
                docker_client.images.remove(image, force=True)


def noted(home, name: str, container) -> bool:
    """Guard's image history has ``name`` on ``container``'s image (what docker.rollback rolls
    back from); if not yet, start it once more (it exits at once) for the monitor to see it."""
    rows = db_rows(home, f"select value from monitor_state where key = 'image:{name}'")
    if rows and json.loads(rows[0][0]).get("current", {}).get("id") == container.image.id:
        return True
    with contextlib.suppress(Exception):
        container.start()
    return False


def ladder_then_revision(home, bare, rita, deploy, v1, v2, name):
    victim = deploy(v1)
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

        wait_for(lambda: past_flap_window(home, 4), 30, "the flap window")
        bad = deploy(v2)  # the fault changes: a bad deploy, every start exits at once
        fifth = wait_for(lambda: find(home, id=5, state="escalated"), 90, "#5 to go to a human")
        asked = [t for t in show(home, 5)["timeline"] if t["type"] == "asked_human"]
        assert (
            "was demoted to approval after 2 failed verifications in a row"
            in (asked[-1]["message"])
        )
        assert f"run #6 on incident #{fifth['id']}" in asked[-1]["message"]  # the evidence
        demoted = json.loads(home.cli("skills", "show", SKILL, "--json").stdout)
        assert (demoted["trust"], demoted["trust_file"]) == ("approval", "trusted")
        assert demoted["outcomes"]["consecutive_failures"] == 2

        # the human's fix becomes revision 2 of the same skill
        wait_for(lambda: noted(home, name, bad), 60, "Guard to note the deploy")
        reply = home.cli("reply", "5", "--", f"docker.rollback {name}")
        assert f"saved as revision 2 of skill {SKILL}" in reply.stdout, reply.stdout
        assert (
            "-- action: docker.start" in reply.stdout
            and "+- action: docker.rollback" in reply.stdout
        )
        wait_for(lambda: find(home, id=5, state="resolved"), 60, "#5 resolved")

        wait_for(lambda: past_flap_window(home, 5), 30, "the flap window")
        bad = deploy(v2)  # the bad deploy again: revision 2 asks first, then heals it
        again = wait_for(  # (the rollback's swap leaves an incident on its renamed old copy)
            lambda: next(
                (
                    i
                    for i in incidents(home)
                    if i["target"] == name and i["id"] > 5 and i["state"] == "awaiting_human"
                ),
                None,
            ),
            90,
            "the next bad deploy to be asked about",
        )
        wait_for(lambda: noted(home, name, bad), 60, "Guard to note the deploy")
        home.cli("approve", str(again["id"]), "--skill", SKILL)
        healed = partial(find, home, id=again["id"], state="resolved")
        wait_for(healed, 90, "the next bad deploy healed by revision 2")

    runs = db_rows(home, "select incident_id, status, skill from remediation_run")
    assert [r[:2] for r in runs] == [
        (1, "verified"),
        (2, "verified"),
        (3, "verified"),
        (4, "verified"),
        (5, "failed"),
        (5, "failed"),
        (5, "verified"),  # the human's rollback
        (again["id"], "verified"),  # revision 2
    ]
    audit = db_rows(home, "select action from audit_log where action like 'skill.%'")
    assert [a for (a,) in audit] == [
        "skill.promotion_proposed",
        "skill.promotion_sent",
        "skill.promoted",
        "skill.demoted",
        "skill.revised",
    ]
    listed = json.loads(home.cli("skills", "list", "--json").stdout)
    assert [s["name"] for s in listed].count(SKILL) == 1 and not [
        s for s in listed if s["name"].startswith("learned-")
    ]
    skill = next(s for s in listed if s["name"] == SKILL)
    assert (skill["revision"], skill["trust"], skill["trust_file"]) == (2, "approval", "approval")
    assert skill["outcomes"]["verified"] == 1 and skill["outcomes"]["consecutive_failures"] == 0
    history = json.loads(home.cli("skills", "history", SKILL, "--json", "--diff").stdout)
    one, two = history["revisions"]
    assert (one["outcomes"]["verified"], one["outcomes"]["failed"]) == (4, 2)
    assert "promoted" in [c["made_by"] for c in one["commits"]]
    assert two["made_by"] == "learned from incident #5" and two["outcomes"]["verified"] == 1
    assert "+- action: docker.rollback" in two["diff"]
    assert "revision: 2" in git("show", f"main:{SKILL}/skill.yaml", cwd=bare)  # pushed
