"""Network isolation: nothing by default; a granted network reaches only that network.

Only containers started here are targeted: two internal networks, each with a busybox httpd.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass

import docker
import pytest
from loguru import logger

from guard.config import SandboxSettings
from guard.domain.exceptions import SandboxError
from guard.sandbox import SandboxGrants
from guard.sandbox.docker import DockerSandbox
from tests.helpers.sandbox import TEST_PREFIX, assert_host_ok

pytestmark = pytest.mark.docker


@dataclass
class Site:
    network: str
    server: str  # container name, resolvable on its network
    ip: str


@pytest.fixture
def sites(sbx_client: docker.DockerClient, sbx_busybox_image: str) -> Iterator[list[Site]]:
    """Two internal networks, each with an httpd serving /etc (so /passwd exists)."""
    tag = secrets.token_hex(3)
    made: list[Site] = []
    networks, containers = [], []
    try:
        for i in (1, 2):
            net = sbx_client.networks.create(f"guard-test-net{i}-{tag}", internal=True)
            networks.append(net)
            server = sbx_client.containers.run(
                sbx_busybox_image,
                ["httpd", "-f", "-p", "8080", "-h", "/etc"],
                name=f"guard-test-web{i}-{tag}",
                network=net.name,
                detach=True,
                user="65534",
            )
            containers.append(server)
            server.reload()
            ip = server.attrs["NetworkSettings"]["Networks"][net.name]["IPAddress"]
            made.append(Site(net.name, server.name, ip))
        yield made
    finally:
        for c in containers:
            c.remove(force=True)
        for n in networks:
            n.remove()


def _fetch(url: str) -> str:
    return f"wget -q -O - {url}"  # (busybox wget -T segfaults; the run timeout guards)


async def test_no_network_by_default(
    sbx: DockerSandbox, sites: list[Site], sbx_client: docker.DockerClient
) -> None:
    for site in sites:
        result = await sbx.run(_fetch(f"http://{site.ip}:8080/passwd"), timeout=10)
        assert result.exit_code != 0
        assert "nobody" not in result.stdout
    assert "unreachable" in result.stderr.lower()  # no route at all: there is only lo
    assert_host_ok(sbx_client)


async def test_granted_network_reaches_only_that_network(
    sbx_client: docker.DockerClient,
    sbx_settings: SandboxSettings,
    sites: list[Site],
    warnings_logged: list[str],
) -> None:
    mine, other = sites
    box = DockerSandbox(
        sbx_settings,
        incident_id=f"{TEST_PREFIX}{secrets.token_hex(4)}",
        client=sbx_client,
        grants=SandboxGrants(network=mine.network),
    )
    try:
        by_name = await box.run(_fetch(f"http://{mine.server}:8080/passwd"), timeout=10)
        assert by_name.exit_code == 0 and "nobody" in by_name.stdout
        assert "nobody" in (await box.run(_fetch(f"http://{mine.ip}:8080/passwd"))).stdout
        for url in (f"http://{other.ip}:8080/passwd", f"http://{other.server}:8080/passwd"):
            # The engine drops cross-network packets (and its DNS knows no other network's
            # names), so these hang until the timeout instead of failing fast.
            result = await box.run(_fetch(url), timeout=3)
            assert result.exit_code != 0 and "nobody" not in result.stdout, url
    finally:
        await box.close()
    assert not warnings_logged  # an internal network is the expected kind
    assert_host_ok(sbx_client)


@pytest.fixture
def warnings_logged() -> Iterator[list[str]]:
    """Guard's loguru warnings while the test runs."""
    seen: list[str] = []
    sink = logger.add(lambda m: seen.append(m.record["message"]), level="WARNING")
    yield seen
    logger.remove(sink)


@pytest.fixture
def open_bridge(sbx_client: docker.DockerClient) -> Iterator[str]:
    """A plain (not internal) bridge network: it routes to the host and beyond."""
    net = sbx_client.networks.create(f"guard-test-open-{secrets.token_hex(3)}", driver="bridge")
    try:
        yield str(net.name)
    finally:
        net.remove()


async def test_a_non_internal_network_grant_warns_once(
    sbx_client: docker.DockerClient,
    sbx_settings: SandboxSettings,
    open_bridge: str,
    warnings_logged: list[str],
) -> None:
    assert sbx_client.api.inspect_network(open_bridge)["Internal"] is False
    for _ in range(2):  # two incidents granting it: one warning per network, not per sandbox
        box = DockerSandbox(
            sbx_settings,
            incident_id=f"{TEST_PREFIX}{secrets.token_hex(4)}",
            client=sbx_client,
            grants=SandboxGrants(network=open_bridge),
        )
        try:
            assert (await box.run("true")).exit_code == 0
        finally:
            await box.close()
    (warning,) = [w for w in warnings_logged if open_bridge in w]
    assert f"sandbox network grant '{open_bridge}' is not an internal Docker network" in warning
    assert "the internet" in warning
    assert f"docker network create --internal {open_bridge}" in warning


async def test_missing_network_says_what_to_do(
    sbx_client: docker.DockerClient, sbx_settings: SandboxSettings
) -> None:
    box = DockerSandbox(
        sbx_settings,
        incident_id=f"{TEST_PREFIX}nonet",
        client=sbx_client,
        grants=SandboxGrants(network=f"guard-test-missing-{secrets.token_hex(3)}"),
    )
    with pytest.raises(SandboxError, match="docker network create"):
        await box.run("true")
    await box.close()


@pytest.mark.parametrize("bad", ["host", "container:abc", "default"])
def test_host_and_shared_namespaces_cannot_be_granted(bad: str) -> None:
    with pytest.raises(ValueError, match="not allowed"):
        SandboxGrants(network=bad)
