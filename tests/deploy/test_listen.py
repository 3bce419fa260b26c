"""Where ``guard run`` listens: loopback unless told otherwise; the image says otherwise.

Only loopback is ever sent traffic: the non-loopback case is checked on the bound socket
(the kernel's listening table), not by connecting to another address."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO, GuardHome
from tests.deploy.test_web import free_port, guard_running


def listening_on(port: int) -> set[str]:
    """The local addresses with a TCP socket listening on ``port`` (IPv4, from /proc)."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, _remote, state = line.split()[1:4]
        address, hex_port = local.split(":")
        if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
            found.add(".".join(str(b) for b in reversed(bytes.fromhex(address))))
    return found


@pytest.fixture
def quiet_home(home: GuardHome) -> GuardHome:
    home.playbook("web", [{"id": "up", "type": "http", "url": "http://127.0.0.1:1/"}])
    return home


def test_guard_run_listens_on_loopback_unless_told(
    quiet_home: GuardHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GUARD_HTTP_HOST", raising=False)
    port = free_port()
    with guard_running(quiet_home, port, PORT=str(port)) as running:
        assert running.get("/healthz").status_code == 200
        assert listening_on(port) == {"127.0.0.1"}
    assert f"on http://127.0.0.1:{port}" in running.err


def test_http_host_opens_guard_run_to_every_interface(quiet_home: GuardHome) -> None:
    port = free_port()
    with guard_running(quiet_home, port, PORT=str(port), GUARD_HTTP_HOST="0.0.0.0") as running:
        assert running.get("/healthz").status_code == 200  # via loopback, the only target here
        assert listening_on(port) == {"0.0.0.0"}
    assert f"on http://0.0.0.0:{port}" in running.err


def test_the_image_and_its_manifests_listen_on_every_interface() -> None:
    """The container's port is published from outside it: the image sets the host (the
    health of a running image is tested in test_image.py)."""
    dockerfile = (REPO / "deploy" / "Dockerfile").read_text()
    assert "GUARD_HTTP_HOST=0.0.0.0" in dockerfile
