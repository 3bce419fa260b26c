"""Shared fixtures for the sandbox tests: a real engine, real images, and strict cleanup.

Every test module in tests/sandbox/ gets them (plain helpers live
in ``tests.helpers.sandbox``). Fixture names start with ``sbx`` so they never collide with the
suite's own conftest. Images are built on first use and kept (they are cache); every container a
test creates is removed even when it fails, and a test that leaves one behind fails.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Iterator

import docker
import pytest

from guard.config import SandboxSettings
from guard.sandbox import images
from guard.sandbox.docker import DockerSandbox, connect
from tests.helpers.images import build_lock, ensure_busybox_image
from tests.helpers.sandbox import BUSYBOX_IMAGE, TEST_PREFIX, TOOLBOX_IMAGE, leftover_containers


@pytest.fixture(scope="session")
def sbx_client() -> Iterator[docker.DockerClient]:
    client = connect(timeout=300)
    yield client
    client.close()


@pytest.fixture(scope="session")
def sbx_busybox_image(sbx_client: docker.DockerClient) -> str:
    """A 2 MB static-busybox image (user 65534), built in about a second if absent."""
    return ensure_busybox_image(sbx_client, BUSYBOX_IMAGE)


@pytest.fixture(scope="session")
def sbx_toolbox_image(sbx_client: docker.DockerClient) -> str:
    """The real toolbox image; built offline (debootstrap, 1-3 min; cached after) if absent."""
    with build_lock():
        if not images.image_exists(sbx_client, TOOLBOX_IMAGE):
            images.build_offline(sbx_client, TOOLBOX_IMAGE)
    return TOOLBOX_IMAGE


@pytest.fixture
def sbx_settings(sbx_busybox_image: str) -> SandboxSettings:
    return SandboxSettings(image=sbx_busybox_image, timeout=20)


@pytest.fixture(autouse=True)
def _sbx_no_leftover_containers(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a docker test that leaves a sandbox container behind (and remove it anyway)."""
    yield
    if "sbx_client" not in request.fixturenames:
        return
    client: docker.DockerClient = request.getfixturevalue("sbx_client")
    left = leftover_containers(client)
    for info in left:
        client.api.remove_container(info["Id"], force=True)
    assert not left, f"sandbox containers left behind: {[c['Names'] for c in left]}"


@pytest.fixture
async def sbx(
    sbx_client: docker.DockerClient, sbx_settings: SandboxSettings
) -> AsyncIterator[DockerSandbox]:
    """A warm busybox sandbox for one test, closed afterwards."""
    box = DockerSandbox(
        sbx_settings, incident_id=f"{TEST_PREFIX}{secrets.token_hex(4)}", client=sbx_client
    )
    await box.start()
    try:
        yield box
    finally:
        await box.close()
    assert box.container_id is None


@pytest.fixture
def sbx_unique() -> str:
    return f"{os.getpid()}-{secrets.token_hex(3)}"
