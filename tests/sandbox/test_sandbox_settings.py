"""Sandbox settings: memory, cpus and pids are checked when the config loads, and a bad value is
reported the way `guard check-config` reports every problem: file, field, why, an example."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import docker
import pytest

from guard.config import SandboxSettings, load_settings
from guard.domain.exceptions import ConfigError
from guard.sandbox.docker import DockerSandbox
from tests.conftest import GuardHome
from tests.helpers.sandbox import TEST_PREFIX


def _problems(tmp_path: Path, sandbox: str) -> str:
    cfg = tmp_path / "guard.yaml"
    cfg.write_text(f"sandbox:\n{sandbox}")
    with pytest.raises(ConfigError) as exc:
        load_settings(cfg)
    return "\n".join(exc.value.problems)


@pytest.mark.parametrize(
    "memory", ["256m", "1g", "1G", "8192k", "1gb", "1.5g", 268435456, "268435456"]
)
def test_docker_memory_sizes_are_accepted(memory: str | int) -> None:
    assert SandboxSettings(memory=memory).memory == str(memory)  # type: ignore[arg-type]


def test_a_bad_memory_size_names_the_field_and_an_example(tmp_path: Path) -> None:
    text = _problems(tmp_path, "  memory: lots\n")
    cfg = tmp_path / "guard.yaml"
    assert f"{cfg}: sandbox.memory: sandbox.memory 'lots': not a Docker memory size" in text
    assert "e.g. '256m' or '1g'" in text


@pytest.mark.parametrize("memory", ["512k", "4m", "1000"])
def test_memory_below_the_engines_minimum_is_refused(tmp_path: Path, memory: str) -> None:
    text = _problems(tmp_path, f"  memory: '{memory}'\n")
    assert f"sandbox.memory: sandbox.memory '{memory}': below Docker's minimum of 6m" in text


@pytest.mark.parametrize("cpus", [0, -1, 0.001, (os.cpu_count() or 1) * 4 + 1])
def test_cpus_must_be_positive_and_sane(tmp_path: Path, cpus: float) -> None:
    text = _problems(tmp_path, f"  cpus: {cpus}\n")
    assert (
        f"{tmp_path / 'guard.yaml'}: sandbox.cpus: sandbox.cpus {float(cpus)}: must be "
        f"from 0.01 to {(os.cpu_count() or 1) * 4}" in text
    )
    assert "e.g. 1.0" in text


@pytest.mark.parametrize("pids", [0, 7, -5])
def test_pids_must_leave_room_for_a_command(tmp_path: Path, pids: int) -> None:
    text = _problems(tmp_path, f"  pids: {pids}\n")
    assert f"sandbox.pids: sandbox.pids {pids}: at least 8" in text and "e.g. 128" in text
    assert SandboxSettings(pids=8).pids == 8


def test_every_bad_field_is_reported_at_once(tmp_path: Path) -> None:
    text = _problems(tmp_path, "  memory: lots\n  cpus: 0\n  pids: 2\n")
    assert [line.split(": ")[1] for line in text.splitlines()] == [
        "sandbox.memory",
        "sandbox.cpus",
        "sandbox.pids",
    ]


def test_environment_overrides_are_checked_too(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GUARD_CONFIG", raising=False)
    monkeypatch.setenv("GUARD_SANDBOX__MEMORY", "lots")
    with pytest.raises(ConfigError) as exc:
        load_settings()
    assert exc.value.problems[0].startswith("environment: sandbox.memory: sandbox.memory 'lots'")


def test_check_config_exits_2_naming_the_field(home: GuardHome) -> None:
    home.write_config({"sandbox": {"memory": "lots", "pids": 4}})
    proc = home.cli("check-config", check=False)
    assert proc.returncode == 2, proc.stderr
    assert (
        f"{home.config}: sandbox.memory: sandbox.memory 'lots': not a Docker memory "
        "size" in proc.stderr
    )
    assert f"{home.config}: sandbox.pids: sandbox.pids 4: at least 8" in proc.stderr
    assert "2 problem(s) found" in proc.stderr


@pytest.mark.docker
async def test_accepted_values_reach_the_engine(
    sbx_client: docker.DockerClient, sbx_busybox_image: str
) -> None:
    settings = SandboxSettings(
        image=sbx_busybox_image,
        memory=96 * 1024 * 1024,
        cpus=0.5,
        pids=16,  # type: ignore[arg-type]
    )
    box = DockerSandbox(
        settings, incident_id=f"{TEST_PREFIX}{secrets.token_hex(4)}", client=sbx_client
    )
    try:
        await box.start()
        host = sbx_client.api.inspect_container(box.container_id)["HostConfig"]
        assert (host["Memory"], host["NanoCpus"], host["PidsLimit"]) == (96 << 20, 5 * 10**8, 16)
    finally:
        await box.close()


def test_the_kubernetes_backend_needs_a_numeric_user(tmp_path: Path) -> None:
    text = _problems(tmp_path, "  backend: kubernetes\n  user: nobody\n")
    assert "sandbox.user 'nobody': the kubernetes backend needs numbers (uid:gid)" in text
    assert "e.g. 65534:65534" in text
    assert SandboxSettings(backend="kubernetes", user="1000:1000").user == "1000:1000"
    assert SandboxSettings(backend="docker", user="nobody").user == "nobody"
