"""Playbook grants: read-only mounts work and stay read-only; dangerous grants are refused."""

from __future__ import annotations

import secrets
from pathlib import Path

import docker
import pytest
from pydantic import ValidationError

from guard.config import SandboxSettings
from guard.sandbox import ReadOnlyMount, SandboxGrants
from guard.sandbox.docker import DockerSandbox
from tests.sandbox_helpers import TEST_PREFIX, assert_host_ok

pytest_plugins = ["tests.sandbox_fixtures"]


def _listing(path: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in path.iterdir()}


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    """World-writable on the host, so only the read-only mount can stop the sandbox writing."""
    (tmp_path / "app.log").write_text("ERROR disk full\n")
    (tmp_path / "app.log").chmod(0o666)
    tmp_path.chmod(0o777)
    return tmp_path


@pytest.mark.docker
async def test_granted_mount_is_visible_and_read_only(
    sbx_client: docker.DockerClient, sbx_settings: SandboxSettings, log_dir: Path
) -> None:
    tmp_path = log_dir
    box = DockerSandbox(
        sbx_settings, incident_id=f"{TEST_PREFIX}{secrets.token_hex(4)}", client=sbx_client,
        grants=SandboxGrants(mounts=[ReadOnlyMount(source=str(tmp_path), target="/logs")]),
    )
    try:
        assert (await box.run("grep ERROR /logs/app.log")).stdout == "ERROR disk full\n"
        for attempt in ("echo x >> /logs/app.log", "rm /logs/app.log", "touch /logs/new"):
            result = await box.run(attempt)
            assert result.exit_code != 0 and "Read-only file system" in result.stderr, attempt
    finally:
        await box.close()
    assert _listing(tmp_path) == {"app.log": "ERROR disk full\n"}  # untouched on the host
    assert_host_ok(sbx_client)


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("/var/run/docker.sock", "/sock"),
        ("/run/docker.sock", "/x"),
        ("/var/run", "/x"),  # contains the socket
        ("/srv/app.sock", "/x"),
        ("/", "/host"),
        ("relative/path", "/x"),
        ("/srv", "/tmp"),
        ("/srv", "/proc/x"),
        ("/srv", "relative"),
    ],
)
def test_dangerous_mounts_are_refused(source: str, target: str) -> None:
    with pytest.raises(ValidationError):
        ReadOnlyMount(source=source, target=target)


def test_grants_allow_nothing_else() -> None:
    with pytest.raises(ValidationError):
        SandboxGrants.model_validate({"privileged": True})
    with pytest.raises(ValidationError):
        SandboxGrants.model_validate({"mounts": [{"source": "/srv", "target": "/x", "rw": True}]})
    with pytest.raises(ValidationError):
        SandboxGrants(secrets=["not a name"])
    assert SandboxGrants(network="none").network is None
