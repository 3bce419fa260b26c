"""Playbook grants: read-only mounts work and stay read-only; dangerous grants are refused,
by the path as written and by where it really leads."""

from __future__ import annotations

import secrets
import socket
from pathlib import Path

import docker
import pytest
from pydantic import ValidationError

from guard.config import SandboxSettings
from guard.domain.exceptions import SandboxError
from guard.sandbox import ReadOnlyMount, SandboxGrants
from guard.sandbox.docker import DockerSandbox
from guard.util.validation import format_validation_error
from tests.helpers.sandbox import TEST_PREFIX, assert_host_ok


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
        sbx_settings,
        incident_id=f"{TEST_PREFIX}{secrets.token_hex(4)}",
        client=sbx_client,
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
        ("//", "/host"),
        ("relative/path", "/x"),
        ("/srv", "/tmp"),
        ("/srv", "/proc/x"),
        ("/srv", "/"),
        ("/srv", "relative"),
        ("/dev/sda", "/x"),
        ("/sys/fs/cgroup", "/x"),
        ("/run/containerd/containerd.sock", "/x"),
        ("/run/docker/metrics.sock", "/x"),
    ],
)
def test_dangerous_mounts_are_refused(source: str, target: str) -> None:
    with pytest.raises(ValidationError):
        ReadOnlyMount(source=source, target=target)


def _refusal(source: str, target: str = "/x") -> str:
    with pytest.raises(ValidationError) as exc:
        ReadOnlyMount(source=source, target=target)
    (error,) = exc.value.errors()
    return str(error["msg"])


def test_symlink_to_the_docker_socket_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "innocent-logs"
    link.symlink_to("/var/run/docker.sock")
    why = _refusal(str(link), "/logs")
    # Names the grant, says why (where it really leads) and what to do instead.
    assert f"read-only mount {link} -> /logs refused" in why
    assert "resolves to /run/docker.sock" in why or "resolves to /var/run/docker.sock" in why
    assert "sockets are never mounted" in why and "granted network" in why
    dir_link = tmp_path / "run"
    dir_link.symlink_to("/var/run")  # a directory holding the socket
    assert "contains" in _refusal(str(dir_link)) and "docker.sock" in _refusal(str(dir_link))


def test_any_unix_socket_is_refused_by_its_real_path(tmp_path: Path) -> None:
    sock_path = tmp_path / "engine"  # no .sock suffix: only its real type gives it away
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        assert "is a Unix socket" in _refusal(str(sock_path))


@pytest.mark.parametrize(
    "source", ["/proc/1/root/etc", "/proc/self/root", "//proc/1/root/etc", "/proc/1/../1/root/etc"]
)
def test_proc_is_refused_by_its_text(source: str) -> None:
    # Resolving /proc/1/root/etc gives /etc (or EACCES): only the text shows what it is.
    why = _refusal(source)
    assert "is inside /proc" in why and "grant only the directory or file" in why


@pytest.mark.parametrize(
    "source", ["/var/lib/docker", "/var/lib/docker/containers/abc/x.log", "/var/lib", "/var"]
)
def test_docker_state_is_refused(source: str) -> None:
    why = _refusal(source)
    assert "/var/lib/docker" in why or "docker.sock" in why
    assert "grant" in why


def test_docker_host_socket_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "engine").mkdir()
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/engine/api")
    assert "DOCKER_HOST" in _refusal(f"{tmp_path}/engine")
    assert "DOCKER_HOST" in _refusal(f"{tmp_path}/engine/api")


def test_refusals_reach_the_playbook_author_with_the_field(tmp_path: Path) -> None:
    link = tmp_path / "logs"
    link.symlink_to("/var/run/docker.sock")
    with pytest.raises(ValidationError) as exc:
        SandboxGrants.model_validate({"mounts": [{"source": str(link), "target": "/logs"}]})
    (line,) = format_validation_error("playbooks/app.yaml", exc.value)
    assert line.startswith(f"playbooks/app.yaml: mounts[0]: read-only mount {link} -> /logs ")


@pytest.mark.docker
async def test_a_symlink_changed_after_loading_is_caught_at_mount_time(
    sbx_client: docker.DockerClient, sbx_settings: SandboxSettings, tmp_path: Path
) -> None:
    (tmp_path / "logs").mkdir()
    link = tmp_path / "current"
    link.symlink_to(tmp_path / "logs")
    grants = SandboxGrants(mounts=[ReadOnlyMount(source=str(link), target="/logs")])
    assert grants.mounts[0].host_source() == str(tmp_path / "logs")  # fine when loaded
    link.unlink()
    link.symlink_to("/var/run/docker.sock")  # ... then someone repoints it
    box = DockerSandbox(
        sbx_settings,
        incident_id=f"{TEST_PREFIX}{secrets.token_hex(4)}",
        client=sbx_client,
        grants=grants,
    )
    try:
        with pytest.raises(SandboxError, match=r"resolves to \S*docker\.sock"):
            await box.start()
        assert box.container_id is None
    finally:
        await box.close()


@pytest.mark.docker
async def test_a_normal_file_is_still_granted_read_only(
    sbx_client: docker.DockerClient, sbx_settings: SandboxSettings, tmp_path: Path
) -> None:
    conf = tmp_path / "app.conf"
    conf.write_text("max_connections = 100\n")
    conf.chmod(0o666)  # world-writable on the host: only the mount keeps it read-only
    via = tmp_path / "app-current.conf"
    via.symlink_to(conf)  # a harmless symlink is followed, and its target mounted
    box = DockerSandbox(
        sbx_settings,
        incident_id=f"{TEST_PREFIX}{secrets.token_hex(4)}",
        client=sbx_client,
        grants=SandboxGrants(mounts=[ReadOnlyMount(source=str(via), target="/config/app.conf")]),
    )
    try:
        assert (await box.run("cat /config/app.conf")).stdout == "max_connections = 100\n"
        result = await box.run("echo max_connections = 1 > /config/app.conf")
        assert result.exit_code != 0 and "Read-only file system" in result.stderr
        mounts = sbx_client.api.inspect_container(box.container_id)["Mounts"]
        assert [(m["Source"], m["RW"]) for m in mounts] == [(str(conf), False)]
    finally:
        await box.close()
    assert conf.read_text() == "max_connections = 100\n"
    assert_host_ok(sbx_client)


def test_grants_allow_nothing_else() -> None:
    with pytest.raises(ValidationError):
        SandboxGrants.model_validate({"privileged": True})
    with pytest.raises(ValidationError):
        SandboxGrants.model_validate({"mounts": [{"source": "/srv", "target": "/x", "rw": True}]})
    with pytest.raises(ValidationError):
        SandboxGrants(secrets=["not a name"])
    assert SandboxGrants(network="none").network is None
