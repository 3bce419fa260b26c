"""``guard doctor`` as a user runs it: what works here, before it is needed.

Railway-like (no Docker engine, no cluster: ``DOCKER_HOST`` names nothing, no kubeconfig), a
skill with shell steps cannot run, and ``guard doctor`` says so and exits 1; with the real
engine the same home is fine and exits 0.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import GuardHome
from tests.helpers.nowhere import no_engine_no_cluster
from tests.skills.test_skills_files import write_skill

SANDBOX_NONE = "sandbox: none (no Docker engine, no cluster): shell steps cannot run here"


@pytest.fixture
def railway_like(home: GuardHome, monkeypatch: pytest.MonkeyPatch) -> GuardHome:
    """A home with one skill of shell steps, where no engine and no cluster are reachable."""
    no_engine_no_cluster(monkeypatch, home.root)
    write_skill(home.root / "skills", "look-at-disk", {"steps": [{"run": "df -h"}]})
    home.playbook("web", [{"id": "web", "type": "http", "url": "http://127.0.0.1:9/"}])
    return home


def test_doctor_says_no_sandbox_can_run_shell_steps_here(railway_like: GuardHome) -> None:
    done = railway_like.cli("doctor", check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(line.strip(" !").startswith(SANDBOX_NONE) for line in lines), done.stdout
    assert any("monitors: ok (1 http)" in line for line in lines), done.stdout
    assert any("actions docker.*: none (no Docker engine" in line for line in lines), done.stdout
    assert any(line.strip(" !").startswith("actions http.*: ok") for line in lines), done.stdout


def test_doctor_json_lists_every_capability(railway_like: GuardHome) -> None:
    done = railway_like.cli("doctor", "--json", check=False)
    assert done.returncode == 1, done.stderr
    found = {c["name"]: c for c in json.loads(done.stdout)["capabilities"]}
    assert {"monitors", "sandbox", "probes", "model"} <= set(found)
    assert any(name.startswith("actions ") for name in found)
    sandbox = found["sandbox"]
    assert sandbox["state"] == "none" and sandbox["problem"] is True
    assert sandbox["why"] == "no Docker engine, no cluster"
    assert found["model"]["state"] == "none" and found["model"]["problem"] is False


@pytest.mark.docker
def test_with_an_engine_the_same_home_is_fine(
    railway_like: GuardHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DOCKER_HOST")
    done = railway_like.cli("doctor", check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sandbox: ok (docker" in done.stdout and "shell steps run here" in done.stdout
