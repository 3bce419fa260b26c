"""The toolbox image: Dockerfile and offline build agree, tools work, rebuilds hit the cache."""

from __future__ import annotations

import contextlib
import secrets
from pathlib import Path

import docker
import pytest

from guard.domain.exceptions import SandboxError
from guard.sandbox import images
from tests.helpers.images import build_lock
from tests.helpers.sandbox import assert_host_ok, sandbox_on

pytestmark = pytest.mark.timeout(600)  # a first offline toolbox build takes 1-3 minutes
DOCKERFILE = Path(__file__).resolve().parents[2] / "sandbox-images" / "toolbox" / "Dockerfile"


def test_dockerfile_is_generated_from_the_spec() -> None:
    assert DOCKERFILE.read_text() == images.dockerfile_text(), (
        "sandbox-images/toolbox/Dockerfile is stale: write guard.sandbox.images.dockerfile_text() "
        "to it"
    )


def test_missing_debootstrap_says_how_to_install(sbx_client: docker.DockerClient) -> None:
    with pytest.raises(SandboxError, match="apt-get install debootstrap"):
        images.build_offline(sbx_client, "never-built:x", debootstrap="/nonexistent/debootstrap")


@pytest.mark.docker
async def test_toolbox_tools_run_in_the_hardened_sandbox(
    sbx_client: docker.DockerClient, sbx_toolbox_image: str
) -> None:
    async with sandbox_on(sbx_client, sbx_toolbox_image, limit=30) as box:
        checks = {
            "curl --version": "curl 7.",
            "jq -n '{a: 1} | .a'": "1",
            "dig -v 2>&1": "DiG 9.",
            "nslookup -version 2>&1": "nslookup 9.",
            "nc -h 2>&1 | head -1": "OpenBSD netcat",
            "ps --version": "procps-ng",
            "python3 -c 'import sys; print(sys.version_info[:2])'": "(3, 11)",
            "psql --version": "psql (PostgreSQL) 15",
            "redis-cli --version": "redis-cli 7.",
            "bash -c 'echo $BASH_VERSION'": "5.2",
            "id -u": "65534",
        }
        for command, expected in checks.items():
            result = await box.run(command)
            assert expected in result.stdout, (command, result)
        no_net = await box.run("curl -sS -m 3 http://example.invalid/", timeout=10)
        assert no_net.exit_code != 0  # no network, no DNS
        hog = await box.run("python3 -c 'b = bytearray(600 * 2**20)'")
        assert hog.oom_killed and hog.exit_code == 137
        assert (await box.run("python3 -c 'print(2 + 2)'")).stdout == "4\n"
    assert_host_ok(sbx_client)


@pytest.mark.docker
def test_offline_rebuild_reuses_the_cached_rootfs(
    sbx_client: docker.DockerClient, sbx_toolbox_image: str
) -> None:
    if not (images.rootfs_cache() / ".guard-complete").exists():
        pytest.skip("toolbox image was not built offline on this machine: no rootfs cache")
    name = f"guard-test-toolbox:{secrets.token_hex(3)}"
    stages: list[str] = []
    try:
        with build_lock():  # the cache is shared with the other test workers' builds
            images.build_offline(sbx_client, name, on_stage=stages.append)
        assert "debootstrap (cached)" in stages and "debootstrap" not in stages
        assert images.image_exists(sbx_client, name)
    finally:
        with contextlib.suppress(docker.errors.ImageNotFound):
            sbx_client.images.remove(name)
