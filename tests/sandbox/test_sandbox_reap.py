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
from collections.abc import Callable
from pathlib import Path

import docker
import pytest
import yaml

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
from guard.sandbox.owners import owner_alive, process_started
from tests.helpers.sandbox import TEST_PREFIX

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]


def _guard(*args: str, cwd: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    env.pop("GUARD_CONFIG", None)
    return subprocess.Popen(
        [sys.executable, "-m", "guard.cli", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
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
    victim = _guard(
        "sandbox", "run", "--image", sbx_busybox_image, "--", "sleep", "100", cwd=tmp_path
    )
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
        dead = [
            c
            for c in _sandboxes(sbx_client, **{LABEL_HOST: host})
            if not _alive(int(c["Labels"][LABEL_PID]))  # type: ignore[index]
        ]
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
        sbx_busybox_image,
        ["sleep", "60"],
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
    me = {
        LABEL: "1",
        LABEL_INCIDENT: incident,
        LABEL_HOST: socket.gethostname(),
        LABEL_PID: str(os.getpid()),
    }
    made = {
        "earlier-process": {**me, LABEL_OWNER: "old", LABEL_PID_STARTED: "1"},
        "this-process": {
            **me,
            LABEL_OWNER: "live",
            LABEL_PID_STARTED: process_started(os.getpid()),
        },
        "no-start-label": {**me, LABEL_OWNER: "older-guard"},
    }
    ids = {
        name: sbx_client.api.create_container(sbx_busybox_image, ["true"], labels=labels)["Id"]
        for name, labels in made.items()
    }
    try:
        assert process_started(os.getpid()) not in ("", "1")
        assert [owner_alive(labels) for labels in made.values()] == [False, True, True]
        # Other tests' Guards sweep dead owners on this same engine and may take the earlier
        # process's box first: what must hold is the end state, not who removed it.
        assert (
            reap_orphans(sbx_client, only_dead_owners=True, labels={LABEL_INCIDENT: incident}) <= 1
        )
        left = {c["Id"] for c in _sandboxes(sbx_client, **{LABEL_INCIDENT: incident})}
        assert left == {ids["this-process"], ids["no-start-label"]}
    finally:
        for cid in ids.values():
            with contextlib.suppress(docker.errors.NotFound):
                sbx_client.api.remove_container(cid, force=True)


def _wait(what: str, cond: Callable[[], object], within: float = 60) -> None:
    deadline = time.monotonic() + within
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_sigkilled_guard_run_mid_diagnosis_is_reaped_by_the_next_guard_run(
    sbx_client: docker.DockerClient, sbx_busybox_image: str, tmp_path: Path
) -> None:
    """The appliance itself (not a one-shot command) dies mid-command; its successor cleans up."""
    log = tmp_path / "app.log"
    log.write_text("")
    (tmp_path / "playbooks").mkdir()
    (tmp_path / "playbooks" / "app.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "app",
                "monitors": [
                    {
                        "id": "app-log",
                        "type": "logfile",
                        "path": str(log),
                        "every": "1s",
                        "rules": [{"kind": "boom", "pattern": "BOOM"}],
                    }
                ],
                "diagnostics": [{"run": "sleep 100", "timeout": "120s"}],
            }
        )
    )
    (tmp_path / "guard.yaml").write_text(
        yaml.safe_dump(
            {
                "data_dir": str(tmp_path / "data"),
                "playbooks_dir": str(tmp_path / "playbooks"),
                "skills_dir": str(tmp_path / "skills"),
                "http_host": "127.0.0.1",
                "http_port": 0,
                "sandbox": {"image": sbx_busybox_image},
            }
        )
    )
    victim = _guard("run", "--config", str(tmp_path / "guard.yaml"), cwd=tmp_path)
    successor = None
    try:
        mine = {LABEL_PID: str(victim.pid)}
        _wait("guard run to start", lambda: (tmp_path / "data" / "guard.db").exists())
        written = [0.0]

        def boom_until_diagnosed() -> object:
            """Write the line again every 2 s until a sandbox runs: a line written before the
            log monitor fixed its start (a slow start on a busy box) is never read."""
            if victim.poll() is not None or _sandboxes(sbx_client, **mine):
                return True
            if time.monotonic() - written[0] > 2:
                with open(log, "a") as f:
                    f.write("BOOM the service fell over\n")
                written[0] = time.monotonic()
            return False

        _wait("the diagnosis sandbox", boom_until_diagnosed, within=120)
        assert victim.poll() is None, victim.communicate()
        victim.send_signal(signal.SIGKILL)  # mid-command: `sleep 100` is running in the box
        victim.wait(10)
        assert _sandboxes(sbx_client, **mine), "should be orphaned now"

        successor = _guard("run", "--config", str(tmp_path / "guard.yaml"), cwd=tmp_path)
        _wait(
            "the successor to reap the orphan",
            lambda: successor.poll() is not None or not _sandboxes(sbx_client, **mine),
        )
        assert successor.poll() is None, successor.communicate()
        successor.send_signal(signal.SIGTERM)  # a clean stop removes its own sandboxes
        successor.wait(60)
        for pid in (victim.pid, successor.pid):
            assert _sandboxes(sbx_client, **{LABEL_PID: str(pid)}) == []
    finally:
        for proc in (victim, successor):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(10)
        for proc in (victim, successor):
            if proc is not None:
                for info in _sandboxes(sbx_client, **{LABEL_PID: str(proc.pid)}):
                    sbx_client.api.remove_container(info["Id"], force=True)
