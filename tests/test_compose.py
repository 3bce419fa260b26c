"""``deploy/compose.yaml`` validates with Docker Compose and wires Guard as docs/DEPLOY.md says."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from guard.config import load_settings
from tests.conftest import REPO

DEPLOY = REPO / "deploy"


def compose_command() -> list[str]:
    docker = shutil.which("docker")
    if (
        docker
        and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0
    ):
        return [docker, "compose"]
    if legacy := shutil.which("docker-compose"):
        return [legacy]
    pytest.skip(
        "Docker Compose is not installed: apt-get install docker-compose (or the "
        "docker-compose-plugin) to validate deploy/compose.yaml"
    )


@pytest.fixture
def rendered(tmp_path: Path) -> dict[str, Any]:
    """``compose config`` of the file, with guard.env made from the example as a user would."""
    work = tmp_path / "deploy"
    shutil.copytree(DEPLOY, work, ignore=shutil.ignore_patterns("wheelhouse", "kubernetes"))
    shutil.copy(work / "guard.env.example", work / "guard.env")
    (tmp_path / "playbooks").mkdir()
    proc = subprocess.run(
        [*compose_command(), "-p", "guard", "-f", str(work / "compose.yaml"), "config"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = yaml.safe_load(proc.stdout)
    return result


def test_compose_file_is_valid_and_guard_talks_to_the_proxy_only(rendered: dict[str, Any]) -> None:
    guard = rendered["services"]["guard"]
    proxy = rendered["services"]["socket-proxy"]
    assert guard["restart"] == "unless-stopped"
    assert guard["environment"]["DOCKER_HOST"] == "tcp://socket-proxy:2375"
    assert guard["environment"]["GUARD_DATA_DIR"] == "/data"
    assert guard["build"]["dockerfile"] == "deploy/Dockerfile"
    mounts = [str(v) for v in guard["volumes"]]
    assert any("guard-data" in m and "/data" in m for m in mounts), mounts
    assert not any("docker.sock" in m for m in mounts)  # no raw socket for Guard
    assert any("docker.sock" in str(v) and ":ro" in str(v) for v in proxy["volumes"])
    assert rendered["networks"]["docker-api"]["internal"] is True
    assert "docker-api" in guard["networks"] and "docker-api" in proxy["networks"]
    assert "ports" not in proxy  # the proxy is never published
    flags = {k: str(v) for k, v in proxy["environment"].items()}
    for on in ("CONTAINERS", "EVENTS", "EXEC", "IMAGES", "POST"):
        assert flags[on] == "1"
    for off in ("BUILD", "VOLUMES", "NETWORKS", "SYSTEM"):
        assert flags[off] == "0"


def test_env_example_is_a_valid_guard_configuration(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for line in (DEPLOY / "guard.env.example").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            key, value = line.split("=", 1)
            monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    settings = load_settings()
    assert str(settings.data_dir) == "/data" and settings.log_format == "json"
    assert settings.secret_values() == []  # the example holds no secrets
