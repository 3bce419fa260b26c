"""The address a request is judged by: the TCP peer, or a listed proxy's last hop only."""

from __future__ import annotations

import pytest

from guard.access.proxies import Proxies
from guard.config import Settings

pytestmark = pytest.mark.unit

ACCESS = {"proxy_header": "X-Forwarded-User", "trusted_proxies": ["10.0.0.5", "fd00::/64"]}


@pytest.mark.parametrize(
    ("peer", "forwarded", "client"),
    [
        ("127.0.0.1", ["10.0.0.5"], "127.0.0.1"),  # claims to be the proxy: it is not
        ("127.0.0.1", [], "127.0.0.1"),
        ("10.0.0.5", ["203.0.113.9"], "203.0.113.9"),
        ("10.0.0.5", ["1.1.1.1, 203.0.113.9"], "203.0.113.9"),  # what the client sent is left
        ("10.0.0.5", ["1.1.1.1", "203.0.113.9"], "203.0.113.9"),  # a header line of its own
        ("fd00::7", ["2001:db8::1"], "2001:db8::1"),
        ("10.0.0.5", ["203.0.113.9, "], "10.0.0.5"),  # an empty last hop: the proxy itself
        ("10.0.0.5", [], "10.0.0.5"),
        (None, ["203.0.113.9"], ""),
    ],
)
def test_the_client_is_the_peer_unless_a_listed_proxy_says(
    peer: str | None, forwarded: list[str], client: str
) -> None:
    proxies = Proxies.of(Settings(access=ACCESS).access)
    assert proxies.client(peer, forwarded) == client
    assert proxies.header == "x-forwarded-user"


def test_a_request_relayed_by_an_unlisted_proxy_is_told_apart() -> None:
    proxies = Proxies.of(Settings(access=ACCESS).access)
    assert proxies.relayed("127.0.0.1", ["203.0.113.9"])
    assert not proxies.relayed("127.0.0.1", [])
    assert not proxies.relayed("10.0.0.5", ["203.0.113.9"])  # a listed one is believed
    assert not Proxies().trusted("127.0.0.1")  # nothing listed: nobody is a proxy
