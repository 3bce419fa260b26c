"""Automation that cannot run away, and remediation that survives a crash (real engine)."""

from __future__ import annotations

import signal
import sqlite3
import time

import pytest
import yaml

from tests.agent_helpers import find, guard_process, setup_docker_home, show, wait_for

pytestmark = pytest.mark.docker


def tune_skill(home, name: str, **changes) -> None:
    path = home.root / "skills" / name / "skill.yaml"
    spec = yaml.safe_load(path.read_text())
    spec.update(changes)
    path.write_text(yaml.safe_dump(spec, sort_keys=False))


def db_rows(home, sql: str) -> list[tuple]:
    with sqlite3.connect(home.root / "data" / "guard.db") as conn:
        return conn.execute(sql).fetchall()


def test_a_skill_that_cannot_fix_runs_at_most_the_limit_then_escalates(home, containers):
    labels = setup_docker_home(home, skills=["docker-start-exited"])
    tune_skill(home, "docker-start-exited", steps=[
        {"action": "docker.start", "args": {"container": "{{ incident.target }}"}},
        {"wait": "1s"}, {"verify": {"timeout": "3s", "interval": "500ms"}}])
    # the first run sleeps; every later start exits at once: the skill cannot cure it
    crasher = containers.run(
        "crasher", "test -f /tmp/started && exit 3; touch /tmp/started; sleep 600", labels=labels)
    with guard_process(home):
        crasher.kill()
        inc = wait_for(lambda: find(home, target=crasher.name, state="escalated"), 90,
                       "the incident to escalate")
        runs = db_rows(home, "select skill, status from remediation_run")
        assert runs == [("docker-start-exited", "failed"), ("docker-start-exited", "failed")]
        blocks = db_rows(home, "select skill, target from skill_block where cleared_at is null")
        assert blocks == [("docker-start-exited", crasher.name)]
        timeline = show(home, inc["id"])["timeline"]
        assert any(t["type"] == "skill_disabled" for t in timeline)
        asked = [t for t in timeline if t["type"] == "asked_human"]
        assert asked and "disabled" in asked[-1]["message"]
        time.sleep(5)  # no loop: nothing else runs while it waits for a human
        assert len(db_rows(home, "select id from remediation_run")) == 2


def test_a_restart_between_remediation_and_verification_does_not_repeat_it(
        home, containers, docker_client):
    labels = setup_docker_home(home, skills=["docker-start-exited"])
    tune_skill(home, "docker-start-exited", steps=[
        {"action": "docker.restart", "args": {"container": "{{ incident.target }}"}},
        {"wait": "6s"}, {"verify": {"timeout": "10s"}}])
    victim = containers.run("victim", "sleep 600", labels=labels)
    with guard_process(home) as proc:
        killed_at = time.time_ns()
        victim.kill()
        wait_for(lambda: db_rows(home, "select status from agent_step where kind='wait'")
                 == [("running",)], 60, "the remediation to reach its wait step")
        proc.send_signal(signal.SIGKILL)  # Guard dies between the restart and verification
        proc.wait(10)
    steps = db_rows(home, "select kind, status from agent_step order by id")
    assert steps == [("action", "done"), ("wait", "running"), ("verify", "pending")]
    with guard_process(home):
        inc = wait_for(lambda: find(home, target=victim.name, state="resolved"), 60,
                       "the resumed incident to resolve")
    steps = db_rows(home, "select kind, status from agent_step order by id")
    assert steps == [("action", "done"), ("wait", "done"), ("verify", "done")]
    starts = [e for e in docker_client.events(
        since=killed_at // 10**9, until=int(time.time()) + 1,
        filters={"container": victim.id, "event": "start"}, decode=True)
        if e["timeNano"] > killed_at]
    assert len(starts) == 1, starts  # restarted once, not twice
    timeline = show(home, inc["id"])["timeline"]
    assert any("docker-start-exited" in t["message"] for t in timeline if t["to_state"] == "resolved")
