"""``type: tls``: a certificate made with openssl, served by a real TLS server on 127.0.0.1, is
an incident ``expires_within`` days ahead; an untrusted chain and a wrong name are too."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from guard.domain.records import Signal
from guard.monitors.tls import TlsMonitor
from guard.playbooks.models import Playbook, TlsMonitorSpec
from tests.helpers.tls import Certificates, TlsServer, tls_server


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return Certificates(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def expiring(certs: Certificates) -> Iterator[TlsServer]:
    with tls_server(*certs.leaf("shop.test", days=5)) as server:
        yield server


@pytest.fixture(scope="module")
def fresh(certs: Certificates) -> Iterator[TlsServer]:
    with tls_server(*certs.leaf("shop.test", days=90)) as server:
        yield server


async def look(port: int, **fields: Any) -> Signal:
    entry = {"id": "shop-tls", "type": "tls", "host": "127.0.0.1", "port": port, **fields}
    [spec] = Playbook.model_validate({"name": "t", "monitors": [entry]}).monitors
    assert isinstance(spec, TlsMonitorSpec)
    monitor = TlsMonitor(spec)
    [signal] = (await monitor.check({})).signals
    await monitor.close()
    return signal


async def test_a_certificate_expiring_within_the_days_is_an_incident_with_its_facts(
    certs: Certificates, expiring: TlsServer
) -> None:
    sig = await look(
        expiring.port, server_name="shop.test", ca_file=str(certs.ca), expires_within="14d"
    )
    assert (sig.status, sig.kind, sig.source, sig.target) == (
        "firing",
        "tls_expiring",
        "tls",
        "shop.test:" + str(expiring.port),
    )
    assert f"shop.test:{expiring.port} certificate expires in 5 days (" in sig.message
    assert "within 14 days: subject CN=shop.test, issuer CN=Guard Test CA" in sig.message
    assert sig.details["subject"] == "CN=shop.test" and sig.details["issuer"] == "CN=Guard Test CA"
    assert sig.details["dns_names"] == ["shop.test"] and 4 < sig.details["days_left"] <= 5
    assert sig.details["not_after"].endswith(" UTC")
    quiet = await look(
        expiring.port, server_name="shop.test", ca_file=str(certs.ca), expires_within="3d"
    )
    assert (quiet.status, quiet.kind) == ("ok", "tls_ok")
    assert "certificate valid for 5 more days" in quiet.message


async def test_an_untrusted_chain_and_a_wrong_name_fire(
    certs: Certificates, fresh: TlsServer
) -> None:
    ok = await look(fresh.port, server_name="shop.test", ca_file=str(certs.ca))
    assert (ok.status, ok.kind) == ("ok", "tls_ok")
    untrusted = await look(fresh.port, server_name="shop.test")  # the system's trust store
    assert (untrusted.status, untrusted.kind) == ("firing", "tls_untrusted")
    assert "unable to get local issuer certificate" in untrusted.message
    assert untrusted.details["subject"] == "CN=shop.test"  # read from the unverified handshake
    wrong = await look(fresh.port, server_name="admin.test", ca_file=str(certs.ca))
    assert (wrong.status, wrong.kind) == ("firing", "tls_hostname_mismatch")
    assert "admin.test" in wrong.message
    unchecked = await look(fresh.port, server_name="admin.test", verify=False)
    assert unchecked.status == "ok"


async def test_no_handshake_is_an_incident() -> None:
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    sig = await look(port, timeout=2)
    assert (sig.status, sig.kind) == ("firing", "tls_unreachable")
    assert sig.message.startswith(f"127.0.0.1:{port}: no TLS handshake: ")
