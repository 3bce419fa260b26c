"""Plain helpers for the sandbox tests (the fixtures are in ``tests.sandbox.conftest``)."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import docker

from guard.config import SandboxSettings
from guard.sandbox.docker import LABEL, LABEL_INCIDENT, DockerSandbox

BUSYBOX_IMAGE = "guard-test-busybox:sandbox"
TOOLBOX_IMAGE = "guard-toolbox:latest"
TEST_PREFIX = f"test{os.getpid()}-"  # this process only: tests run in parallel workers


@asynccontextmanager
async def sandbox_on(
    client: docker.DockerClient, image: str, limit: float = 20
) -> AsyncIterator[DockerSandbox]:
    """A sandbox of ``image`` on ``client``'s engine for a new test incident (commands limited
    to ``limit`` seconds), closed afterwards."""
    box = DockerSandbox(
        SandboxSettings(image=image, timeout=limit),
        incident_id=f"{TEST_PREFIX}{secrets.token_hex(4)}",
        client=client,
    )
    try:
        yield box
    finally:
        await box.close()


def vm_kib(field: str) -> int:
    """A ``/proc/self/status`` figure (VmRSS, VmHWM) of this test process, in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"{field} missing from /proc/self/status")


def leftover_containers(client: docker.DockerClient) -> list[dict[str, object]]:
    """Sandbox containers started by these tests (incident ids starting ``test-``)."""
    found = client.api.containers(all=True, filters={"label": f"{LABEL}=1"})
    return [c for c in found if c["Labels"].get(LABEL_INCIDENT, "").startswith(TEST_PREFIX)]


def assert_host_ok(client: docker.DockerClient) -> None:
    """The host can still fork and the engine still answers: the sandbox hurt nobody."""
    assert subprocess.run(["true"], timeout=10).returncode == 0
    assert client.ping()
    assert shutil.disk_usage("/").free > 0
