"""The ``SandboxPool`` port's contract, stated once and run against every backend.

Every backend (``sandbox.backend``: ``docker`` on the real engine with the offline-built busybox
image, and on the same engine as a remote one over TLS (``docker-tls``: tests/fakes/docker_tls.py)
and over SSH (``docker-ssh``: tests/helpers/ssh_engine.py),
``kubernetes`` against the fake API server whose kubelet runs each step pod on that engine,
``local`` as plain subprocesses) keeps what ``guard.sandbox.base`` promises: a failing command is
a fact in its ``ExecResult``, never an exception; the time limit ends the command and every
process it started; output is capped and granted secrets are redacted; one sandbox per incident,
rebuilt when its grants change, serving one command at a time; ``release`` and ``close`` leave
nothing behind; ``reap`` never touches a live Guard's sandboxes, and after ``kill -9`` of a Guard
in the middle of a command, the next Guard's ``reap`` leaves neither the command's processes nor
its sandbox. Two differences are declared,
not hidden: ``kubernetes`` runs each command in a fresh pod (``/workspace`` is not kept between
commands, nothing stays between them) and its output is the pod's log (stdout and stderr merged
into ``stdout``, whole lines, interleaved as the container runtime read them). The backends that isolate (``docker``, ``kubernetes``; ``local``
isolates nothing by design) also promise no network, no host files, no capabilities, a non-root
user; ``docker`` also memory and process limits (a pod's process limit is the kubelet's).

The hardening of the Docker backend in depth (fork bombs sampled from outside, disk caps, network
grants, the engine's view of the container) stays in ``tests/sandbox/``.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import json
import os
import secrets
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from guard.config import SandboxSettings
from guard.domain.exceptions import SandboxError
from guard.sandbox import Sandbox, SandboxGrants, SandboxPool, WarmSandboxPool
from guard.sandbox.base import TIMEOUT_EXIT_CODE, ExecResult
from tests.fakes.docker_tls import tls_engine, tls_environ
from tests.helpers.images import ensure_busybox_image
from tests.helpers.sandbox import BUSYBOX_IMAGE, TEST_PREFIX

TOKEN = "CONTRACT_TOKEN"
LIMIT = 1024  # bytes kept per stream (the smallest output_limit)
PIDS = 32
# Every process of the host or the sandbox whose command line is exactly ``sleep NAP``: a
# number of this test process's own (``local`` sees the host, where another worker's sandbox
# may be sleeping too).
NAP = 4000 + os.getpid() % 50000
SURVIVORS = (
    "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done"
    f" | grep -c '^sleep {NAP} $'"
)


@dataclass
class Backend:
    """One implementation under contract, and how to see what it leaves on the host."""

    pool: WarmSandboxPool
    leftovers: Callable[[str], list[str]]  # an incident id -> its containers or directories
    token: str  # the value of the secret TOKEN in the pool's environment
    child: dict[str, Any]  # what a Guard in another process needs: settings, kubeconfig
    warm: bool = True  # one sandbox kept between commands (its /workspace too)
    merged: bool = False  # stderr arrives in stdout (a pod's log)

    def shows(self, result: ExecResult, stdout: str, stderr: str) -> bool:
        """Whether ``result`` is what a command printing these shows on this backend (merged:
        every line in ``stdout``; how the two streams interleave is the container runtime's)."""
        if self.merged:
            lines = sorted((stdout + stderr).splitlines(keepends=True))
            return sorted(result.stdout.splitlines(keepends=True)) == lines and not result.stderr
        return (result.stdout, result.stderr) == (stdout, stderr)

    def kept(self) -> int:
        """What one incident leaves between its commands: its warm sandbox, or nothing."""
        return 1 if self.warm else 0


@pytest.fixture(scope="module")
def contract_engine() -> Iterator[Any]:
    from guard.sandbox.docker import connect

    client = connect(timeout=300)
    ensure_busybox_image(client, BUSYBOX_IMAGE)
    yield client
    client.close()


@pytest.fixture(scope="module")
def tls_contract_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The same engine as a remote one: over TLS with client certificates, found from docker's
    own variables (``DOCKER_HOST``, ``DOCKER_TLS_VERIFY``, ``DOCKER_CERT_PATH``)."""
    from guard.sandbox.docker import connect

    with tls_engine(tmp_path_factory.mktemp("tls")) as engine, pytest.MonkeyPatch.context() as env:
        for name, value in tls_environ(engine).items():
            env.setenv(name, value)
        client = connect(timeout=300)
        ensure_busybox_image(client, BUSYBOX_IMAGE)
        yield client
        client.close()


@pytest.fixture(scope="module")
def ssh_contract_engine(
    contract_engine: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """The same engine as a remote one over SSH (``DOCKER_HOST=ssh://root@HOST``, docker-py's
    paramiko with the key and known_hosts under ``$HOME/.ssh``: tests/helpers/ssh_engine.py)."""
    from guard.sandbox.docker import connect
    from tests.helpers.ssh_engine import ssh_engine, ssh_environ

    prefix = f"guard-test-{os.getpid()}-contract-ssh"
    home = tmp_path_factory.mktemp("ssh-home")
    with ssh_engine(contract_engine, home, prefix) as engine, pytest.MonkeyPatch.context() as env:
        for name, value in ssh_environ(engine).items():
            env.setenv(name, value)
        client = connect(timeout=300)
        yield client
        client.close()


@pytest.fixture
def kube_cluster(contract_engine: Any, tmp_path: Path) -> Iterator[Any]:
    from tests.helpers.kube_sandbox import fake_cluster

    with fake_cluster(contract_engine, tmp_path) as cluster:
        yield cluster


def _docker(request: pytest.FixtureRequest, token: str, engine: str = "contract_engine") -> Backend:
    from guard.sandbox.docker import LABEL_INCIDENT

    client = request.getfixturevalue(engine)
    settings = SandboxSettings(image=BUSYBOX_IMAGE, timeout=20, output_limit=LIMIT, pids=PIDS)

    def containers(incident_id: str) -> list[str]:
        found = client.api.containers(
            all=True, filters={"label": f"{LABEL_INCIDENT}={incident_id}"}
        )
        return [c["Id"] for c in found]

    pool = WarmSandboxPool(settings, environ={TOKEN: token}, client=client)
    return Backend(pool, containers, token, _child(settings))


def _local(request: pytest.FixtureRequest, token: str) -> Backend:
    settings = SandboxSettings(backend="local", timeout=20, output_limit=LIMIT, pids=PIDS)

    def workspaces(incident_id: str) -> list[str]:
        return glob.glob(os.path.join(tempfile.gettempdir(), f"guard-local-{incident_id}-*"))

    pool = WarmSandboxPool(settings, environ={TOKEN: token})
    return Backend(pool, workspaces, token, _child(settings))


def _kubernetes(request: pytest.FixtureRequest, token: str) -> Backend:
    from tests.helpers.kube_sandbox import NAMESPACE

    cluster = request.getfixturevalue("kube_cluster")
    settings = SandboxSettings(
        backend="kubernetes",
        namespace=NAMESPACE,
        image=BUSYBOX_IMAGE,
        timeout=60,  # a pod started on a loaded engine: `cat` took over 20 s in a CI run
        output_limit=LIMIT,
        pids=PIDS,
    )
    pool = WarmSandboxPool(settings, environ={TOKEN: token}, cluster=cluster.settings)
    child = _child(settings, str(cluster.settings.kubeconfig))
    return Backend(pool, cluster.leftovers, token, child, warm=False, merged=True)


def _child(settings: SandboxSettings, kubeconfig: str | None = None) -> dict[str, Any]:
    return {"settings": settings.model_dump(mode="json"), "kubeconfig": kubeconfig}


DOCKER = pytest.param(_docker, id="docker", marks=pytest.mark.docker)
DOCKER_TLS = pytest.param(
    partial(_docker, engine="tls_contract_engine"), id="docker-tls", marks=pytest.mark.docker
)
DOCKER_SSH = pytest.param(
    partial(_docker, engine="ssh_contract_engine"), id="docker-ssh", marks=pytest.mark.docker
)
KUBERNETES = pytest.param(_kubernetes, id="kubernetes", marks=pytest.mark.docker)
LOCAL = pytest.param(_local, id="local")


async def _opened(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    made: Backend = request.param(request, f"tok-{secrets.token_hex(8)}")
    assert isinstance(made.pool, SandboxPool)
    try:
        yield made
    finally:
        await made.pool.close()


@pytest.fixture(params=[DOCKER, DOCKER_TLS, DOCKER_SSH, KUBERNETES, LOCAL])
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    """Every backend."""
    async for made in _opened(request):
        yield made


@pytest.fixture(params=[DOCKER, DOCKER_TLS, KUBERNETES])
async def isolating(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    """The backends that isolate (``local`` isolates nothing: development only)."""
    async for made in _opened(request):
        yield made


@pytest.fixture(params=[DOCKER])
async def limited(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    """The backends that cap memory and processes themselves (a pod's pids are the kubelet's)."""
    async for made in _opened(request):
        yield made


@pytest.fixture
def incident() -> Callable[[], str]:
    """Fresh incident ids, unique to this test (and short: the local backend names its
    directories after the first 20 characters)."""
    return lambda: f"{TEST_PREFIX}{secrets.token_hex(3)}"


# -- every backend ---------------------------------------------------------------------------


async def test_a_command_gives_its_exit_code_output_and_inputs(
    backend: Backend, incident: Callable[[], str]
) -> None:
    box = await backend.pool.get(incident())
    assert isinstance(box, Sandbox)
    result = await box.run(
        'cat; echo "$GREETING" >&2; exit 3', stdin="in\n", env={"GREETING": "hi"}
    )
    assert result.exit_code == 3 and backend.shows(result, "in\n", "hi\n"), result
    assert not result.ok and not result.timed_out
    assert (await box.run(["sh", "-c", "echo argv"])).stdout == "argv\n"
    assert (await box.run("pwd", workdir="/tmp")).stdout == "/tmp\n"
    missing = await box.run(["/no/such/program"])  # a failing command is a fact...
    assert missing.exit_code != 0 and not missing.ok
    with pytest.raises(SandboxError):  # ...a command that is not one is an error
        await box.run([])


async def test_the_time_limit_ends_the_command_and_all_it_started(
    backend: Backend, incident: Callable[[], str]
) -> None:
    box = await backend.pool.get(incident())
    result = await box.run(f"sleep {NAP} & sleep {NAP}; echo never", timeout=1)
    assert result.timed_out and result.exit_code == TIMEOUT_EXIT_CODE and not result.ok
    assert "never" not in result.stdout
    assert (await box.run(SURVIVORS)).stdout.strip() == "0"
    assert (await box.run("echo alive")).ok  # the sandbox serves the next command


async def test_output_is_capped_and_granted_secrets_are_redacted(
    backend: Backend, incident: Callable[[], str]
) -> None:
    box = await backend.pool.get(incident(), SandboxGrants(secrets=[TOKEN]))
    result = await box.run(f'echo "${TOKEN}"; echo "${TOKEN}" >&2')
    shown = f"[REDACTED:{TOKEN}]\n"
    assert backend.shows(result, shown, shown), result
    assert backend.token not in repr(result)
    big = await box.run("head -c 100000 /dev/zero | tr '\\0' x")
    assert big.exit_code == 0 and big.stdout_truncated == 100_000 - LIMIT
    assert big.stdout.startswith("x" * LIMIT) and "[... truncated" in big.stdout


async def test_a_missing_secret_is_a_sandbox_error_naming_it(
    backend: Backend, incident: Callable[[], str]
) -> None:
    with pytest.raises(SandboxError, match="CONTRACT_MISSING"):
        await backend.pool.get(incident(), SandboxGrants(secrets=["CONTRACT_MISSING"]))


async def test_one_warm_sandbox_per_incident_rebuilt_when_its_grants_change(
    backend: Backend, incident: Callable[[], str]
) -> None:
    one, other = incident(), incident()
    boxes = await asyncio.gather(*(backend.pool.get(one) for _ in range(4)))
    assert all(b is boxes[0] for b in boxes)  # asked at once: still one sandbox
    assert (await boxes[0].run("echo kept > note")).ok
    kept = await (await backend.pool.get(one)).run("cat note")
    assert kept.stdout == "kept\n" if backend.warm else kept.exit_code != 0  # a fresh pod
    assert (await (await backend.pool.get(other)).run("cat note")).exit_code != 0  # its own
    assert len(backend.leftovers(one)) == backend.kept()
    granted = await backend.pool.get(one, SandboxGrants(secrets=[TOKEN]))
    assert granted is not boxes[0]
    assert (await granted.run("cat note")).exit_code != 0  # nothing of the old one is seen
    assert len(backend.leftovers(one)) == backend.kept()  # the old one is gone


async def test_one_command_at_a_time_in_a_sandbox(
    backend: Backend, incident: Callable[[], str]
) -> None:
    box = await backend.pool.get(incident())
    held = "mkdir held && sleep 1 && rmdir held"  # fails if another command holds it
    results = await asyncio.gather(*(box.run(held) for _ in range(3)))
    assert [r.exit_code for r in results] == [0, 0, 0], [r.stderr for r in results]


async def test_release_and_close_leave_nothing_behind(
    backend: Backend, incident: Callable[[], str]
) -> None:
    first, second, third = incident(), incident(), incident()
    for name in (first, second, third):
        assert (await (await backend.pool.get(name)).run("true")).ok
        assert len(backend.leftovers(name)) == backend.kept(), name
    await backend.pool.release(first)
    assert backend.leftovers(first) == []
    await backend.pool.release(first)  # idempotent
    await backend.pool.release(incident())  # an incident it never saw
    await backend.pool.close()
    assert backend.leftovers(second) == backend.leftovers(third) == []
    await backend.pool.close()


async def test_reap_spares_a_live_guards_sandboxes(
    backend: Backend, incident: Callable[[], str]
) -> None:
    name = incident()
    box = await backend.pool.get(name)
    assert (await box.run("true")).ok
    assert await backend.pool.reap() >= 0
    assert len(backend.leftovers(name)) == backend.kept()
    assert (await box.run("echo still")).stdout == "still\n"


KILLED = """
import asyncio, json, sys
from guard.config import KubernetesSettings, SandboxSettings
from guard.sandbox import WarmSandboxPool
spec = json.loads(sys.argv[1])
cluster = KubernetesSettings(kubeconfig=spec["kubeconfig"]) if spec["kubeconfig"] else None
pool = WarmSandboxPool(SandboxSettings(**spec["settings"]), environ={}, cluster=cluster)
async def main():
    await (await pool.get(sys.argv[2])).run(sys.argv[3])
asyncio.run(main())
"""


def _sleeping(seconds: int) -> int:
    """Processes on this host (the sandboxes' included) whose command line is ``sleep N``."""
    found = 0
    for path in glob.glob("/proc/[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            found += Path(path).read_bytes() == f"sleep\0{seconds}\0".encode()
    return found


async def test_nothing_is_left_after_kill_9_of_guard_once_the_next_one_reaps(
    backend: Backend, incident: Callable[[], str]
) -> None:
    name, seconds = incident(), 5000 + secrets.randbelow(4000)
    guard = await asyncio.create_subprocess_exec(
        sys.executable, "-c", KILLED, json.dumps(backend.child), name, f"sleep {seconds}"
    )
    try:
        for _ in range(300):
            if _sleeping(seconds):
                break
            await asyncio.sleep(0.05)
        assert _sleeping(seconds) and backend.leftovers(name), "the command never started"
    finally:
        guard.kill()  # SIGKILL: no cleanup of its own
        await guard.wait()
    assert await backend.pool.reap() >= 1  # the next Guard's start-up reap
    for _ in range(100):
        if not (_sleeping(seconds) or backend.leftovers(name)):
            break
        await asyncio.sleep(0.05)
    assert (_sleeping(seconds), backend.leftovers(name)) == (0, [])


# -- the backends that isolate ---------------------------------------------------------------


async def test_no_network_no_host_files_no_privileges(
    isolating: Backend, incident: Callable[[], str], tmp_path: Path
) -> None:
    marker = tmp_path / "host-only"
    marker.write_text("host only")
    box = await isolating.pool.get(incident())
    interfaces = (await box.run("cat /proc/net/dev")).stdout.splitlines()[2:]
    assert [line.split(":")[0].strip() for line in interfaces] == ["lo"]
    for path in (str(marker), "/var/run/docker.sock", "/run/docker.sock"):
        assert (await box.run(["test", "-e", path])).exit_code == 1, path
    assert (await box.run("touch /etc/evil")).exit_code != 0  # read-only root
    status = (await box.run("cat /proc/self/status")).stdout
    fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
    assert int(fields["CapEff"], 16) == int(fields["CapBnd"], 16) == 0
    assert fields["NoNewPrivs"].strip() == "1" and fields["Uid"].split()[0] != "0"


async def test_memory_and_process_limits_hold(
    limited: Backend, incident: Callable[[], str]
) -> None:
    box = await limited.pool.get(incident())
    hog = await box.run("dd if=/dev/zero of=/dev/null bs=600M count=1")
    assert hog.oom_killed and not hog.ok
    forks = await box.run(f"for i in $(seq {PIDS * 2}); do sleep 2 & done; wait")
    assert "can't fork" in forks.stderr or "Resource temporarily unavailable" in forks.stderr
    assert (await box.run("echo alive")).ok
