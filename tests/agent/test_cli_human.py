"""The human-facing commands, run as a user would (a `guard` subprocess; real engine for the
answers): approve, deny, skills list/show, and check-config on a broken skill."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from tests.helpers.agent import REPO, db_rows, find, setup_docker_home, show, tune_skill, wait_for

RESTART_SKILL_MD = """---
name: restart-exited
description: Restarts a watched container that exited. Use for docker container_exited incidents.
---

# restart-exited

## When to use

A watched container exited.

## Procedure

1. Restart it (`docker.restart`).

## Pitfalls

- A container that crashes on start exits again.

## Verification

The docker monitor reports the container as running.
"""
RESTART_SKILL_YAML = {
    "triggers": [{"source": "docker", "kind": "container_exited"}],
    "steps": [{"action": "docker.restart", "args": {"container": "{{ incident.target }}"}}],
    "trust": "approval",
    "origin": "manual",
}


@pytest.mark.docker
@pytest.mark.timeout(300)  # eleven CLI calls: at load 10 each takes seconds to start
def test_approve_runs_the_named_skill_and_deny_escalates(home, containers):
    labels = setup_docker_home(home, skills=["docker-start-exited"])
    tune_skill(home, "docker-start-exited", trust="approval")  # it must ask first
    extra = home.root / "skills" / "restart-exited"  # a second candidate, to name with --skill
    extra.mkdir()
    (extra / "SKILL.md").write_text(RESTART_SKILL_MD)
    (extra / "skill.yaml").write_text(yaml.safe_dump(RESTART_SKILL_YAML, sort_keys=False))
    healed = containers.run("healed", "sleep 600", labels=labels)
    refused = containers.run("refused", "sleep 600", labels=labels)
    healed.kill()
    refused.kill()
    home.cli("run", "--once", "--heal")
    first = wait_for(lambda: find(home, target=healed.name, state="awaiting_human"), 30, "ask")
    second = wait_for(lambda: find(home, target=refused.name, state="awaiting_human"), 30, "ask")
    asked = [t for t in show(home, first["id"])["timeline"] if t["type"] == "asked_human"]
    assert asked and asked[-1]["data"]["options"] == ["docker-start-exited", "restart-exited"]

    # not the best match: the one named
    proc = home.cli("approve", str(first["id"]), "--skill", "restart-exited")
    assert "skill restart-exited ran and the incident is resolved" in proc.stdout
    done = show(home, first["id"])
    assert done["state"] == "resolved" and done["details"]["resolved_by"] == "restart-exited"
    approved = db_rows(home, "select skill, approved_by, status from remediation_run")
    assert approved == [("restart-exited", approved[0][1], "verified")]
    assert approved[0][1].startswith("cli:")
    healed.reload()
    assert healed.status == "running"

    proc = home.cli("deny", str(second["id"]))
    assert "denied; no remedy will run" in proc.stdout
    after = show(home, second["id"])
    assert after["state"] == "escalated"
    assert any(t["type"] == "denied" for t in after["timeline"])
    assert len(db_rows(home, "select id from remediation_run")) == 1  # nothing ran for it
    refused.reload()
    assert refused.status == "exited"

    # answers that cannot be carried out say why, and exit 1
    proc = home.cli("approve", str(second["id"]), "--skill", "no-such-skill", check=False)
    assert proc.returncode == 1 and "no enabled skill named 'no-such-skill'" in proc.stdout
    proc = home.cli("deny", str(first["id"]), check=False)
    assert proc.returncode == 1 and "is resolved; nothing to do" in proc.stdout
    proc = home.cli("deny", "999", check=False)
    assert proc.returncode == 1 and "no incident 999" in proc.stderr


def test_skills_list_json_and_show(home):
    skills_dir = home.root / "skills"
    for name in ("docker-start-exited", "docker-restart-unhealthy"):
        shutil.copytree(REPO / "skills" / name, skills_dir / name)
    listed = json.loads(home.cli("skills", "list", "--json").stdout)
    assert sorted(s["name"] for s in listed) == ["docker-restart-unhealthy", "docker-start-exited"]
    start = next(s for s in listed if s["name"] == "docker-start-exited")
    assert start["trust"] == "trusted" and start["origin"] == "builtin"
    assert start["triggers"][0]["kind"] == "container_exited"
    assert start["limits"]["max_runs"] == 3
    assert any("docker.start" in step for step in start["steps"])

    shown = home.cli("skills", "show", "docker-start-exited").stdout
    assert "name: docker-start-exited" in shown and "## Verification" in shown
    assert "--- skill.yaml" in shown and "action: docker.start" in shown
    proc = home.cli("skills", "show", "no-such-skill", check=False)
    assert proc.returncode == 1 and "no skill named 'no-such-skill'" in proc.stderr


def test_check_config_names_the_file_and_field_of_a_broken_skill(home):
    skills_dir = home.root / "skills"
    shutil.copytree(REPO / "skills" / "docker-start-exited", skills_dir / "docker-start-exited")
    assert home.cli("check-config").returncode == 0
    skill_md = skills_dir / "docker-start-exited" / "SKILL.md"
    _, front, body = skill_md.read_text().split("---", 2)
    meta = yaml.safe_load(front)
    meta["name"] = "Docker_Start"  # uppercase and underscore: not an agentskills.io name
    skill_md.write_text(f"---\n{yaml.safe_dump(meta, sort_keys=False)}---{body}")
    proc = home.cli("check-config", check=False)
    assert proc.returncode == 2
    problems = proc.stdout + proc.stderr
    assert "docker-start-exited/SKILL.md: name:" in problems
    assert "Docker_Start" in problems and "1 problem(s) found" in problems
