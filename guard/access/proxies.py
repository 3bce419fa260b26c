"""Whom the web server believes about the client: the TCP peer, and a trusted proxy's word.

Every request's client address is its TCP peer. Only a peer listed in
``access.trusted_proxies`` is believed about anything else: its ``access.proxy_header`` (the
signed-in user), its ``X-Forwarded-Proto`` and the last ``X-Forwarded-For`` hop (the address it
appended, which is the one it saw). From any other peer those headers are ignored, so a
loopback client cannot claim to be a proxy, nor rotate ``X-Forwarded-For`` for a fresh
wrong-token budget. uvicorn's own proxy-header handling is off (``guard.web.server``): it trusts
127.0.0.1 by default and would rewrite the peer from the client's own headers first.
"""

from __future__ import annotations

from collections.abc import Iterable
from ipaddress import ip_address, ip_network

from guard.config.safety import AccessSettings

FORWARDED_FOR = "x-forwarded-for"


class Proxies:
    """The trusted reverse proxies: their addresses, and the header naming the signed-in user."""

    def __init__(self, header: str = "", addresses: Iterable[str] = ()) -> None:
        self.header = header.lower()
        self.networks = [ip_network(a, strict=False) for a in addresses]

    @classmethod
    def of(cls, access: AccessSettings) -> Proxies:
        return cls(access.proxy_header or "", access.trusted_proxies)

    def trusted(self, peer: str | None) -> bool:
        """Whether the TCP peer ``peer`` is a listed proxy (never a forwarded address)."""
        if peer is None or not self.networks:
            return False
        try:
            address = ip_address(peer)
        except ValueError:
            return False
        return any(address in net for net in self.networks)

    def client(self, peer: str | None, forwarded_for: Iterable[str] = ()) -> str:
        """The address a request is judged and counted by: the TCP peer, or behind a trusted
        proxy the last ``X-Forwarded-For`` hop (every header line of it, joined, as sent)."""
        if self.trusted(peer):
            hops = [h.strip() for line in forwarded_for for h in line.split(",")]
            if hops and hops[-1]:
                return hops[-1]
        return peer or ""

    def relayed(self, peer: str | None, forwarded_for: Iterable[str]) -> bool:
        """A request an unlisted proxy relayed (it sent ``X-Forwarded-For``): its peer is
        not the client, so it is not taken for a local one either."""
        return not self.trusted(peer) and any(line.strip() for line in forwarded_for)
