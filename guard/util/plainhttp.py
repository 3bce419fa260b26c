"""Which URLs would carry a credential in clear: plain ``http://`` to a host off this machine.

A token, API key or bot token sent over plain http can be read (and replayed) by anything on
the path. Loopback (``localhost``, 127.0.0.0/8, ``::1``) never leaves the machine, so a local
server, a sidecar on the pod's loopback or a test fixture stays allowed; anything else needs
https, or an explicit ``allow_insecure_http: true`` on its settings section
(``guard.config`` checks every section that sends a credential to a URL).

Tested by ``tests/config/test_plain_http.py``.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

__all__ = ["cleartext_host", "is_loopback"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, without brackets) is this machine's loopback."""
    host = host.strip().rstrip(".").lower()
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def cleartext_host(url: str | None) -> str | None:
    """The host ``url`` would send to in clear: it is plain http and not loopback (else None)."""
    if not url:
        return None
    parts = urlsplit(url.strip())
    if parts.scheme.lower() != "http":
        return None
    host = parts.hostname or ""
    return None if is_loopback(host) else host or "(no host)"
