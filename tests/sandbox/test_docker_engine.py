"""``guard.util.docker_engine.ping``: the engine's ``/_ping`` over its unix socket, no SDK.

Asked of a real engine (when this machine has one at the default socket), of a local server
speaking the engine's answer on a socket of its own, of one answering 500 and of a socket that
is not there; an address only docker-py reaches is left to it.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from guard.util.docker_engine import DEFAULT_HOST, ping


@contextlib.contextmanager
def _engine_like(path: Path, status: bytes) -> Iterator[None]:
    """A unix-socket server answering every request the way the engine answers ``/_ping``."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(4)
    seen: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                seen.append(conn.recv(4096))
                conn.sendall(b"HTTP/1.1 " + status + b"\r\nContent-Length: 2\r\n\r\nOK")

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield
    finally:
        server.close()
    assert all(s.startswith(b"GET /_ping HTTP/1.1\r\n") for s in seen)


@pytest.fixture
def engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "docker.sock"
    monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
    with _engine_like(path, b"200 OK"):
        yield path


@pytest.mark.unit
def test_an_engine_that_answers_is_reachable(engine: Path) -> None:
    assert ping(5) == ""


@pytest.mark.unit
def test_an_engine_that_fails_its_ping_is_named_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "docker.sock"
    monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
    with _engine_like(path, b"500 Internal Server Error"):
        said = ping(5)
    assert said is not None
    assert said.startswith(f"cannot reach the Docker engine at DOCKER_HOST=unix://{path}")
    assert "/_ping answered 500 Internal Server Error" in said
    assert "point DOCKER_HOST at it" in said


@pytest.mark.unit
def test_a_socket_that_is_not_there_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/none.sock")
    said = ping(5)
    assert said is not None and "No such file or directory" in said


@pytest.mark.unit
@pytest.mark.parametrize("host", ["tcp://127.0.0.1:2376", "ssh://guard@127.0.0.1"])
def test_an_address_only_the_sdk_reaches_is_left_to_it(
    host: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", host)
    assert ping(5) is None


@pytest.mark.docker
def test_the_real_engine_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    if not Path(DEFAULT_HOST.removeprefix("unix://")).exists():
        pytest.skip("no engine at the default socket here")
    assert ping(10) == ""
