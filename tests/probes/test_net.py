"""The network probes against real local servers: an HTTP service (its status, timing, a
capped and redacted body), a closed port, a name that does not resolve, and TLS certificates
(an expired one, a valid one) served on 127.0.0.1."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from guard.actions import ActionError
from tests.helpers.agent import free_port
from tests.helpers.certs import https_site, make_certs, tls_server
from tests.helpers.probes import fixed_site, probe, probe_settings

pytestmark = pytest.mark.unit

TOKEN = "gh" + "p_" + "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY2zA4"  # a GitHub token's shape


@pytest.fixture
def site() -> Iterator[str]:
    routes = {
        "/health": (200, b"ok"),
        "/leak": (200, f"db error; token={TOKEN}".encode()),
        "/huge": (200, b"x" * 10_000_000),
    }
    with fixed_site(routes) as url:
        yield url


LOOPBACK = [{"host": "127.0.0.1"}]


async def test_http_reports_status_timing_and_an_excerpt(tmp_path: Path, site: str) -> None:
    settings = probe_settings(tmp_path, allow=LOOPBACK)
    ok = await probe(f"probe.http {site}/health", settings)
    assert ok.ok and ok.message.startswith(f"GET {site}/health -> 200 OK in ")
    assert ok.details["status"] == 200 and ok.details["body"] == "ok" and ok.details["ms"] > 0
    down = await probe(f"probe.http {site}/nothing", settings)
    assert not down.ok and "-> 503" in down.message
    wanted = await probe(f"probe.http {site}/nothing expect_status=503", settings)
    assert wanted.ok and "(expected 503)" in wanted.message


async def test_http_redacts_a_secret_in_a_body_and_caps_a_huge_one(
    tmp_path: Path, site: str
) -> None:
    settings = probe_settings(tmp_path, allow=LOOPBACK, output_limit=1024)
    leak = await probe(f"probe.http {site}/leak", settings)
    assert TOKEN not in leak.message and TOKEN not in str(leak.details)
    assert "token=[REDACTED" in leak.message
    huge = await probe(f"probe.http {site}/huge", settings)
    assert len(huge.message) <= 1024 and len(str(huge.details)) < 5000
    assert huge.details["bytes"] == 10_000_000


async def test_tcp_says_whether_a_port_accepts(tmp_path: Path, site: str) -> None:
    settings = probe_settings(tmp_path, allow=LOOPBACK)
    port = site.rsplit(":", 1)[1]
    up = await probe(f"probe.tcp 127.0.0.1:{port}", settings)
    assert up.ok and "accepts connections: connected in" in up.message
    closed = free_port()
    down = await probe(f"probe.tcp 127.0.0.1:{closed}", settings)
    assert not down.ok and f"127.0.0.1:{closed} (127.0.0.1) refused" in down.message


async def test_dns_a_name_that_does_not_resolve(tmp_path: Path) -> None:
    settings = probe_settings(tmp_path, allow=[{"host": "no-such-host.invalid"}])
    found = await probe("probe.dns no-such-host.invalid", settings)
    assert not found.ok and found.details["addresses"] == []
    assert found.message.startswith("no-such-host.invalid does not resolve: ")
    with pytest.raises(ActionError, match=r"other\.invalid is not in probes.allow"):
        await probe("probe.dns other.invalid", settings)
    local = await probe(
        "probe.dns localhost", probe_settings(tmp_path, allow=[{"host": "localhost"}])
    )
    assert local.ok and "127.0.0.1" in local.details["addresses"]


async def test_tls_an_expired_certificate(tmp_path: Path) -> None:
    ca, server = make_certs(tmp_path, days_left=-12)
    settings = probe_settings(tmp_path, allow=LOOPBACK, ca_file=str(ca))
    with tls_server(server) as port:
        found = await probe(f"probe.tls 127.0.0.1:{port}", settings)
    assert not found.ok
    assert "certificate EXPIRED 12 day(s) ago" in found.message, found.message
    assert "chain: NOT verified: certificate has expired" in found.message
    assert "issuer: CN=Guard Test CA" in found.message
    assert found.details["expired"] is True and found.details["days_left"] == -12


async def test_tls_a_valid_certificate_and_an_unknown_ca(tmp_path: Path) -> None:
    ca, server = make_certs(tmp_path, days_left=30)
    with tls_server(server) as port:
        trusted = await probe(
            f"probe.tls 127.0.0.1:{port}",
            probe_settings(tmp_path, allow=LOOPBACK, ca_file=str(ca)),
        )
        unknown = await probe(
            f"probe.tls 127.0.0.1:{port}", probe_settings(tmp_path, allow=LOOPBACK)
        )
    assert trusted.ok and "expires in 30 day(s)" in trusted.message
    assert "chain: verified (chain and host name)" in trusted.message
    assert not unknown.ok and "NOT verified: unable to get local issuer" in unknown.message


async def test_a_probe_that_gets_no_answer_ends_at_its_budget(tmp_path: Path) -> None:
    """A port that accepts and never answers: each probe ends by its ``timeout=`` (never more
    than ``probes.timeout``) with a result that says so."""
    with socket.create_server(("127.0.0.1", 0), backlog=8) as silent:  # the kernel accepts
        port = silent.getsockname()[1]
        settings = probe_settings(tmp_path, allow=LOOPBACK, timeout="1s")
        started = time.monotonic()
        redis = await probe(f"probe.redis 127.0.0.1:{port} timeout=0.5", settings)
        http = await probe(f"probe.http http://127.0.0.1:{port}/ timeout=30", settings)
        took = time.monotonic() - started
    assert not redis.ok and redis.message == "probe.redis timed out after 0.5s (probes.timeout)"
    assert not http.ok and "timed out" in http.message.lower(), http.message
    assert took < 4, took


async def test_http_goes_to_the_address_it_checked_with_the_name_as_host_and_sni(
    tmp_path: Path, site: str
) -> None:
    """A granted name is resolved once, checked, and connected to by address; the name still
    goes as the Host header and, over https, as the SNI the certificate is verified for."""
    port = site.rsplit(":", 1)[1]
    named = probe_settings(tmp_path, allow=[{"host": "localhost"}])
    plain = await probe(f"probe.http http://localhost:{port}/health", named)
    assert plain.ok and plain.message.startswith(f"GET http://localhost:{port}/health -> 200")
    ca, server = make_certs(tmp_path, days_left=30, host="localhost")
    with https_site(server, b"secure") as tls_port:
        secure = await probe(
            f"probe.http https://localhost:{tls_port}/",
            probe_settings(tmp_path, allow=[{"host": "localhost"}], ca_file=str(ca)),
        )
    assert secure.ok and secure.details["body"] == "secure", secure.message
