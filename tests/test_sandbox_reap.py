"""Crash safety: a SIGKILLed Guard leaves a container; the next start reaps it."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import docker
import pytest

from guard.config import SandboxSettings
from guard.sandbox.docker import (
    INSTANCE_ID,
    LABEL,
    LABEL_HOST,
    LABEL_INCIDENT,
    LABEL_OWNER,
    LABEL_PID,
    LABEL_PID_STARTED,
    DockerSandbox,
    reap_orphans,
)
from guard.sandbox.engine import process_started
from tests.sandbox_helpers import TEST_PREFIX

pytest_plugins = ["tests.sandbox_fixtures"]
pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[1]


def _guard(*args: str, cwd: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    env.pop("GUARD_CONFIG", None)
    return subprocess.Popen(
        [sys.executable, "-m", "guard.cli", *args], cwd=cwd, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _sandboxes(client: docker.DockerClient, **labels: str) -> list[dict[str, object]]:
    filters = [f"{LABEL}=1", *(f"{k}={v}" for k, v in labels.items())]
    found: list[dict[str, object]] = client.api.containers(all=True, filters={"label": filters})
    return found


def test_sigkilled_guard_leaves_nothing_after_restart(
    sbx_client: docker.DockerClient, sbx_busybox_image: str, tmp_path: Path
) -> None:
    victim = _guard("sandbox", "run", "--image", sbx_busybox_image, "--", "sleep", "100",
                    cwd=tmp_path)
    try:
        deadline = time.monotonic() + 30
        while not _sandboxes(sbx_client, **{LABEL_PID: str(victim.pid)}):
            assert victim.poll() is None, victim.communicate()
            assert time.monotonic() < deadline, "the sandbox never started"
            time.sleep(0.1)
        victim.send_signal(signal.SIGKILL)  # mid-command: no cleanup code can run
        victim.wait(10)
        assert _sandboxes(sbx_client, **{LABEL_PID: str(victim.pid)}), "should be orphaned now"

        again = _guard("sandbox", "run", "--image", sbx_busybox_image, "--", "true", cwd=tmp_path)
        _, err = again.communicate(timeout=60)
        assert again.returncode == 0, err.decode()
        # The orphan was reaped and `true`'s own box removed. (Containers of live Guard
        # processes elsewhere on a shared engine are rightly spared, so look only at ours.)
        for pid in (victim.pid, again.pid):
            assert _sandboxes(sbx_client, **{LABEL_PID: str(pid)}) == []
        host = socket.gethostname()
        dead = [c for c in _sandboxes(sbx_client, **{LABEL_HOST: host})
                if not _alive(int(c["Labels"][LABEL_PID]))]  # type: ignore[index]
        assert dead == []
    finally:
        if victim.poll() is None:
            victim.kill()
        victim.wait(10)
        for info in _sandboxes(sbx_client, **{LABEL_PID: str(victim.pid)}):
            sbx_client.api.remove_container(info["Id"], force=True)


async def test_startup_reap_removes_every_foreign_sandbox(
    sbx_client: docker.DockerClient, sbx_settings: SandboxSettings, sbx_busybox_image: str
) -> None:
    # Both boxes share one incident label so the sweep can be narrowed to them: a shared engine
    # may hold a live Guard's sandboxes, which this test must not destroy.
    incident = f"{TEST_PREFIX}reap-{secrets.token_hex(3)}"
    foreign = sbx_client.api.create_container(
        sbx_busybox_image, ["sleep", "60"],
        labels={LABEL: "1", LABEL_OWNER: "another-guard", LABEL_INCIDENT: incident},
    )["Id"]
    mine = DockerSandbox(sbx_settings, incident_id=incident, client=sbx_client)
    scope = {LABEL_INCIDENT: incident}
    try:
        await mine.start()
        assert reap_orphans(sbx_client, only_dead_owners=True, labels=scope) == 0  # unknown owner
        assert reap_orphans(sbx_client, labels=scope) == 1  # startup: everything not ours goes
        left = _sandboxes(sbx_client, **scope)
        assert [c["Id"] for c in left] == [mine.container_id]
        assert left[0]["Labels"][LABEL_OWNER] == INSTANCE_ID  # type: ignore[index]
    finally:
        await mine.close()
        with contextlib.suppress(docker.errors.NotFound):
            sbx_client.api.remove_container(foreign, force=True)


def test_a_reused_pid_is_not_mistaken_for_the_guard_that_made_the_sandbox(
    sbx_client: docker.DockerClient, sbx_busybox_image: str
) -> None:
    """Guard is PID 1 in its container and a restarted container keeps its hostname: the new
    Guard has the old one's pid, and must still see the old sandboxes as orphans."""
    incident = f"{TEST_PREFIX}pidreuse-{secrets.token_hex(3)}"
    me = {LABEL: "1", LABEL_INCIDENT: incident, LABEL_HOST: socket.gethostname(),
          LABEL_PID: str(os.getpid())}
    made = {
        "earlier-process": {**me, LABEL_OWNER: "old", LABEL_PID_STARTED: "1"},
        "this-process": {**me, LABEL_OWNER: "live", LABEL_PID_STARTED: process_started(os.getpid())},
        "no-start-label": {**me, LABEL_OWNER: "older-guard"},
    }
    ids = {name: sbx_client.api.create_container(sbx_busybox_image, ["true"], labels=labels)["Id"]
           for name, labels in made.items()}
    try:
        assert process_started(os.getpid()) not in ("", "1")
        assert reap_orphans(sbx_client, only_dead_owners=True,
                            labels={LABEL_INCIDENT: incident}) == 1
        left = {c["Id"] for c in _sandboxes(sbx_client, **{LABEL_INCIDENT: incident})}
        assert left == {ids["this-process"], ids["no-start-label"]}
    finally:
        for cid in ids.values():
            with contextlib.suppress(docker.errors.NotFound):
                sbx_client.api.remove_container(cid, force=True)
