"""The new actions' refusals as a human meets them: a real ``guard run`` watching a container
whose health check fails, and ``guard reply`` with fixes Guard must refuse (a shell string or
``sh -c`` to docker.exec, a service not in the compose file, a rollback with no recorded
previous image). Each is a failed step with a clear reason on the incident's timeline and in
the reply, and changes nothing; an exec that prints a secret has it redacted in the reply, the
timeline, the steps and the audit; then an argv docker.exec heals it, and the skill learned from it
is saved at ``trust: approval`` (docker.exec is approval-only), not the default ``trusted``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from guard.skills.library import load_skill
from tests.conftest import GuardHome
from tests.helpers.agent import db_rows, find, guard_process, setup_docker_home, show, wait_for

pytestmark = pytest.mark.docker

HEALTH = {"test": ["CMD", "test", "-f", "/tmp/healthy"], "interval": 500_000_000, "retries": 1}


def refused(home: GuardHome, incident: int, *fix: str) -> str:
    """Reply ``fix``; the reply's outcome (the command fails: nothing was cured)."""
    proc = home.cli("reply", str(incident), "--", *fix, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    wait_for(
        lambda: (
            find(home, id=incident, state="awaiting_human")
            or find(home, id=incident, state="escalated")
        ),
        30,
        "the incident back with the human",
    )
    return proc.stdout


def step_results(home: GuardHome, incident: int) -> list[str]:
    return [t["message"] for t in show(home, incident)["timeline"] if t["type"] == "step"]


def test_refused_fixes_are_clear_failed_steps_and_an_argv_exec_heals(
    home: GuardHome, containers: Any, tmp_path: Path
) -> None:
    compose = tmp_path / "compose.yaml"
    compose.write_text(yaml.safe_dump({"services": {"web": {"image": "nginx"}}}))
    no_starters = tmp_path / "no-starters"
    no_starters.mkdir()
    labels = setup_docker_home(
        home,
        skills_dir=None,
        builtin_skills_dir=str(no_starters),
        compose={"file": str(compose)},
    )
    victim = containers.run("victim", "sleep 600", labels=labels, healthcheck=HEALTH)
    with guard_process(home):
        asked = wait_for(
            lambda: find(home, target=victim.name, state="awaiting_human"), 60, "the question"
        )
        n = asked["id"]
        out = refused(home, n, "docker.exec", victim.name, "argv=touch /tmp/healthy; echo")
        assert "takes argv, not a shell command" in out
        out = refused(home, n, "docker.exec", victim.name, "argv=sh -c 'touch /tmp/healthy'")
        assert "Guard never runs sh -c" in out
        out = refused(home, n, "compose.up", "ghost")
        assert f"refuses service 'ghost': it is not in compose.file {compose}" in out
        out = refused(home, n, "docker.rollback", victim.name)
        assert "no previous image recorded" in out
        assert victim.exec_run(["test", "-f", "/tmp/healthy"]).exit_code == 1  # untouched
        out = refused(home, n, "docker.exec", victim.name, "argv=echo password=hunter2secret")
        assert "hunter2secret" not in out  # it ran (exit 0), cured nothing, and was redacted

        healed = home.cli(
            "reply", str(n), "--", "docker.exec", victim.name, "argv=touch /tmp/healthy"
        )
        assert "saved as skill learned-" in healed.stdout, healed.stdout
    steps = step_results(home, n)
    for reason in (
        "takes argv, not a shell command",
        "Guard never runs sh -c",
        "refuses service 'ghost'",
        "no previous image recorded",
    ):
        assert any(reason in s and ": failed" in s for s in steps), (reason, steps)
    assert any("docker.exec argv=echo password=[REDACTED:password]" in s for s in steps), steps
    stored = db_rows(home, "select data from audit_log") + db_rows(
        home, "select result from agent_step"
    )
    assert "hunter2secret" not in repr(stored)
    learned = show(home, n)["details"]["learned_skill"]
    skill = load_skill(home.root / "data" / "skills" / learned)
    assert skill.spec.trust == "approval"
    assert skill.spec.steps[0].action == "docker.exec"
