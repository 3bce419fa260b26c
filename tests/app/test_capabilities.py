"""``assess``: each capability's state from the tables and where Guard runs, in process.

Where no engine and no cluster are reachable (``DOCKER_HOST`` names nothing), shell steps are
found and named by skill file and step, flagged once per skill, and a problem only when
something configured needs them; action families count only for skills that can fire here.
"""

from __future__ import annotations

import pytest

from guard.app.capabilities import assess, shell_steps, unrunnable_warnings, used_families
from guard.sandbox.reach import reach
from guard.skills.library import load_library
from tests.conftest import GuardHome
from tests.helpers.nowhere import no_engine_no_cluster
from tests.skills.test_skills_files import write_skill

pytestmark = pytest.mark.unit


@pytest.fixture
def nowhere(home: GuardHome, monkeypatch: pytest.MonkeyPatch) -> GuardHome:
    no_engine_no_cluster(monkeypatch, home.root)
    return home


def _skills(home: GuardHome) -> list:  # type: ignore[type-arg]
    settings = home.settings()
    return load_library(settings.skills_dir, None)[0]


def test_shell_steps_are_named_by_skill_file_and_step_and_flagged_once(nowhere: GuardHome) -> None:
    write_skill(
        nowhere.root / "skills",
        "look",
        {"diagnostics": [{"run": "uptime"}], "steps": [{"run": "df -h"}, {"wait": "1s"}]},
    )
    write_skill(nowhere.root / "skills", "acts", {"steps": [{"action": "docker.restart"}]})
    shell = shell_steps([], _skills(nowhere))
    ((where, steps),) = shell.items()  # the skill of actions has none
    assert where.startswith("skill look (") and where.endswith("look/skill.yaml)")
    assert steps == ["diagnostics[0]: run uptime", "steps[0]: run df -h"]
    sandbox = reach(nowhere.settings().sandbox, fresh=True)
    assert not sandbox.ok and sandbox.why == "no Docker engine, no cluster"
    (warning,) = unrunnable_warnings(shell, sandbox)
    assert (
        "skill look (" in warning and "skill.yaml" in warning and "steps[0]: run df -h" in warning
    )
    assert "shell steps cannot run here" in warning


def test_no_shell_step_means_a_missing_sandbox_is_no_problem(nowhere: GuardHome) -> None:
    nowhere.playbook("web", [{"id": "web", "type": "http", "url": "http://127.0.0.1:9/"}])
    write_skill(nowhere.root / "skills", "acts", {"steps": [{"action": "http.request"}]})
    found = {
        c.name: c for c in assess(nowhere.settings(), nowhere.playbooks_loaded(), _skills(nowhere))
    }
    assert found["sandbox"].state == "none" and not found["sandbox"].problem
    assert found["monitors"].state == "ok" and not any(c.problem for c in found.values())
    assert found["sandbox"].line == (
        "sandbox: none (no Docker engine, no cluster): shell steps cannot run here"
    )


def test_a_family_counts_only_for_skills_that_can_fire_here(nowhere: GuardHome) -> None:
    write_skill(nowhere.root / "skills", "restart", {"steps": [{"action": "docker.restart"}]})
    skills = _skills(nowhere)  # its trigger is docker's
    assert used_families(skills, {"http"}) == set()
    assert used_families(skills, {"docker"}) == {"docker"}
    nowhere.playbook("c", [{"id": "c", "type": "docker", "selector": {"label": "x=y"}}])
    found = {c.name: c for c in assess(nowhere.settings(), nowhere.playbooks_loaded(), skills)}
    assert found["actions docker.*"].state == "none" and found["actions docker.*"].problem
    assert "DOCKER_HOST=unix:///nonexistent/docker.sock" in found["actions docker.*"].why
    assert found["monitors"].state == "none" and found["monitors"].problem


def test_a_silent_engine_does_not_hold_the_answer(
    nowhere: GuardHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket
    import time

    from guard.sandbox import reach as reaching

    with socket.socket() as silent:  # accepts connections and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        monkeypatch.setenv("DOCKER_HOST", f"tcp://127.0.0.1:{silent.getsockname()[1]}")
        monkeypatch.setattr(reaching, "WAIT", 1.0)
        started = time.monotonic()
        found = reaching.reach(nowhere.settings().sandbox, fresh=True)
        assert time.monotonic() - started < 3
    assert not found.ok and "did not answer within 1 s" in found.why


def test_every_configured_channel_is_listed_from_the_table(nowhere: GuardHome) -> None:
    """``guard doctor`` names each configured channel of ``CHANNELS`` (email alone is one)."""
    nowhere.write_config({})
    states = {c.name: c.state for c in assess(nowhere.settings(), [], [], fresh=False)}
    assert states["channels"] == "degraded" and "channel email" not in states
    mail = {"host": "127.0.0.1", "from": "guard@example.org", "to": "ops@example.org"}
    nowhere.write_config({"email": mail})
    states = {c.name: c.state for c in assess(nowhere.settings(), [], [], fresh=False)}
    assert states["channel email"] == "ok" and "channels" not in states


def test_a_configured_slack_is_a_chat_channel(nowhere: GuardHome) -> None:
    slack = {"bot_token": "xoxb-1", "app_token": "xapp-1", "channel": "C1"}
    nowhere.write_config({"slack": slack})
    found = {c.name: c for c in assess(nowhere.settings(), [], [])}
    assert found["channel slack"].state == "ok" and "channels" not in found
