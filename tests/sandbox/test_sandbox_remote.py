"""A remote engine (``DOCKER_HOST=tcp://...`` over TLS): reached with docker's own variables,
and each way of getting it wrong is an error that names DOCKER_HOST and the fix.

The engine is the local one behind a loopback TLS endpoint that demands a client certificate
(tests/fakes/docker_tls.py); the sandbox contract suite runs whole over it too (``docker-tls`` in
tests/contracts/test_sandbox_contract.py), and a real ``guard run`` heals through it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from guard.domain.exceptions import SandboxError
from guard.sandbox.docker import connect
from tests.conftest import GuardHome
from tests.fakes.docker_tls import TlsEngine, certificates, tls_engine, tls_environ
from tests.helpers.agent import find, guard_process, setup_docker_home, show, wait_for
from tests.helpers.ssh_engine import SshEngine, ssh_engine, ssh_environ

pytestmark = pytest.mark.docker


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[TlsEngine]:
    with tls_engine(tmp_path / "certs") as engine:
        yield engine


def test_every_docker_client_reaches_a_tls_engine_from_dockers_variables(
    remote: TlsEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from guard.actions.docker import engine
    from guard.util.docker_client import Timeouts, docker_client

    for name, value in tls_environ(remote).items():
        monkeypatch.setenv(name, value)
    for client in (connect(), docker_client(Timeouts.monitor), engine()):
        assert client.api.base_url == f"https://127.0.0.1:{remote.port}"
        assert client.ping()
        client.close()


def test_a_plain_client_is_refused_and_told_to_use_tls(
    remote: TlsEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", remote.url)
    monkeypatch.delenv("DOCKER_TLS_VERIFY", raising=False)
    monkeypatch.delenv("DOCKER_CERT_PATH", raising=False)
    with pytest.raises(SandboxError) as refused:
        connect(timeout=10)
    text = str(refused.value)
    assert f"DOCKER_HOST={remote.url}" in text
    assert "DOCKER_TLS_VERIFY=1" in text and "DOCKER_CERT_PATH" in text


def test_a_certificate_from_another_ca_is_refused_naming_the_cert_path(
    remote: TlsEngine, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    stranger = certificates(tmp_path / "stranger", ca_name="someone-else")
    (stranger.dir / "ca.pem").write_bytes((remote.certs.dir / "ca.pem").read_bytes())
    for name, value in tls_environ(remote).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("DOCKER_CERT_PATH", str(stranger.dir))  # trusts the engine; not trusted
    with pytest.raises(SandboxError) as refused:
        connect(timeout=10)
    text = str(refused.value)
    assert f"DOCKER_HOST={remote.url}" in text and "DOCKER_CERT_PATH" in text
    print(text)


def test_a_cert_path_without_the_files_names_them(
    remote: TlsEngine, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name, value in tls_environ(remote).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("DOCKER_CERT_PATH", str(tmp_path / "empty"))
    with pytest.raises(SandboxError, match=r"DOCKER_CERT_PATH \(ca\.pem, cert\.pem, key\.pem"):
        connect(timeout=10)


def test_no_engine_at_all_names_the_default_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    for name in ("DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(SandboxError, match=r"DOCKER_HOST=unix:///nonexistent/docker\.sock"):
        connect(timeout=5)


def test_guard_run_over_tls_heals_a_container_with_a_shell_diagnostic(
    remote: TlsEngine, monkeypatch: pytest.MonkeyPatch, home: GuardHome, containers: Any
) -> None:
    labels = setup_docker_home(
        home,
        skills=["docker-start-exited"],
        diagnostics=[{"run": "echo looking at {{ incident.target }} from $(hostname)"}],
    )
    victim = containers.run("victim", "sleep 600", labels=labels)  # made on the local socket
    for name, value in tls_environ(remote).items():  # Guard sees only the remote engine
        monkeypatch.setenv(name, value)
    with guard_process(home):
        victim.kill()
        inc = wait_for(
            lambda: find(home, target=victim.name, state="resolved"),
            60,
            "the skill to heal the victim through the TLS engine",
        )
    evidence = show(home, inc["id"])["details"]["evidence"]
    assert f"looking at {victim.name} from" in evidence  # the shell diagnostic ran in a sandbox
    victim.reload()
    assert victim.status == "running"
    doctor = home.cli("doctor", "--json", check=False)
    caps = {c["name"]: c for c in json.loads(doctor.stdout)["capabilities"]}
    assert caps["sandbox"]["state"] == "ok" and caps["actions docker.*"]["state"] == "ok"


@pytest.fixture
def over_ssh(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[SshEngine]:
    """The engine over SSH, named by this test's ``DOCKER_HOST`` (and ``HOME``: its .ssh)."""
    client = connect()
    prefix = f"guard-test-{os.getpid()}-{request.node.name[:20]}".lower().replace("_", "-")
    with ssh_engine(client, tmp_path / "home", prefix) as engine:
        for name, value in ssh_environ(engine).items():
            monkeypatch.setenv(name, value)
        yield engine
    client.close()


def test_every_docker_client_reaches_an_engine_over_ssh_from_docker_host(
    over_ssh: SshEngine,
) -> None:
    from guard.actions.docker import engine
    from guard.util.docker_client import Timeouts, docker_client

    for client in (connect(), docker_client(Timeouts.monitor), engine()):
        assert client.ping()
        assert client.version()["ApiVersion"]
        client.close()


def test_an_ssh_engine_whose_host_key_is_not_pinned_is_refused_with_the_fix(
    over_ssh: SshEngine,
) -> None:
    (over_ssh.home / ".ssh" / "known_hosts").write_text("")  # a host Guard never met
    with pytest.raises(SandboxError) as refused:
        connect(timeout=10)
    text = str(refused.value)
    assert f"DOCKER_HOST={over_ssh.url}" in text and "known_hosts" in text
    assert f"ssh root@{over_ssh.box.address} docker version" in text


def test_an_ssh_engine_that_does_not_answer_names_the_ssh_command_to_try(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DOCKER_HOST", "ssh://guard@127.0.0.1:1")
    with pytest.raises(SandboxError) as refused:
        connect(timeout=5)
    text = str(refused.value)
    assert "DOCKER_HOST=ssh://guard@127.0.0.1:1" in text
    assert "ssh -p 1 guard@127.0.0.1 docker version" in text


@pytest.mark.parametrize(("host", "loaded"), [("", False), ("ssh://guard@127.0.0.1:1", True)])
def test_paramiko_is_loaded_only_for_an_engine_over_ssh(host: str, loaded: bool) -> None:
    """docker-py imports paramiko (about 17 MB resident in ``guard run``) whenever it is
    installed; Guard keeps it out unless ``DOCKER_HOST`` is ``ssh://``."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "DOCKER_HOST"}
    env.update({"DOCKER_HOST": host} if host else {})
    probe = "import guard.sandbox.docker, docker, sys; print('paramiko' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == str(loaded)
