"""Shared HTTP sessions for HTTP monitors: one ``aiohttp.ClientSession`` per TLS/proxy setting.

Why aiohttp here when the rest of Guard speaks httpx: the HTTP monitor is the one hot path, a
thousand monitors every ten seconds. On this project's benchmark machine an httpx request cost
1.3-3 ms of CPU (its pure-Python HTTP/1.1 parser and pool scans grow with concurrency) against
0.2-0.3 ms for aiohttp's C parser, which made httpx alone a quarter of a core at 1,200
monitors (``python -m bench.scale``; figures in docs/BENCHMARKS.md). Outbound calls that are
not per-monitor (Railway, forges, model providers, HTTP actions) stay on httpx.

A session owns a connection pool and, for TLS, an ``SSLContext`` with the CA bundle loaded,
which costs hundreds of KB; one per monitor made a thousand monitors cost most of a gigabyte.
Monitors with the same ``ClientConfig`` therefore share one session (and its pooled, kept-alive
connections); what differs per monitor (method, headers, timeout, proxy) goes on each request.

Sessions belong to an event loop (their connections do), so the pool is kept per running loop.
Monitors ``acquire`` a session on their first check and ``release`` it when closed; the last
release closes the session.
"""

from __future__ import annotations

import asyncio
import ssl
import urllib.request
import weakref
from dataclasses import dataclass
from functools import cache
from urllib.parse import urlsplit

import aiohttp
import certifi

USER_AGENT = "guard-monitor"
KEEPALIVE_SECONDS = 30.0  # an idle pooled connection is closed after this


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """What makes two monitors need different sessions."""

    verify: bool = True  # verify the server's TLS certificate
    proxy: str | None = None  # None: the environment's HTTP(S)_PROXY / NO_PROXY (``proxy_for``)


@cache
def verifying_context() -> ssl.SSLContext:
    """Certificates are checked against certifi's bundle (as httpx does) plus the system store
    and ``SSL_CERT_FILE``/``SSL_CERT_DIR``, so a private CA installed on the host works too."""
    context = ssl.create_default_context(cafile=certifi.where())
    context.load_default_certs()
    return context


def proxy_for(url: str, configured: str | None) -> str | None:
    """The proxy a request to ``url`` goes through: the playbook's ``proxy``, else the
    environment's ``HTTP_PROXY``/``HTTPS_PROXY`` unless ``NO_PROXY`` covers the host (as httpx
    and curl do). Worked out once per monitor: aiohttp's own ``trust_env`` re-reads the
    environment and ``~/.netrc`` on every request."""
    if configured:
        return configured
    parts = urlsplit(url)
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]  # untyped in typeshed
    if parts.hostname and bypass(parts.hostname):
        return None
    return urllib.request.getproxies_environment().get(parts.scheme)


@dataclass(slots=True)
class _Shared:
    session: aiohttp.ClientSession
    users: int = 0


class HttpClients:
    """Refcounted ``ClientSession``s by (running loop, ``ClientConfig``)."""

    def __init__(self) -> None:
        self._by_loop: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[ClientConfig, _Shared]
        ] = weakref.WeakKeyDictionary()

    @staticmethod
    def _build(config: ClientConfig) -> aiohttp.ClientSession:
        # No cap on connections: a check waiting for a pooled connection would time out as if
        # its endpoint had; how many checks run at once is ``scheduler.max_concurrent_checks``.
        connector = aiohttp.TCPConnector(
            limit=0,
            limit_per_host=0,
            ssl=verifying_context() if config.verify else False,
            keepalive_timeout=KEEPALIVE_SECONDS,
        )
        return aiohttp.ClientSession(
            connector=connector,
            headers={"User-Agent": USER_AGENT},
            trust_env=False,  # the environment's proxies come from ``proxy_for``
            # a check is stateless: a cookie one endpoint sets is never sent with a later check
            # (the session is shared by every monitor with this configuration)
            cookie_jar=aiohttp.DummyCookieJar(),
        )

    def acquire(self, config: ClientConfig) -> aiohttp.ClientSession:
        """The shared session for ``config`` on the running loop; pair with ``release``."""
        sessions = self._by_loop.setdefault(asyncio.get_running_loop(), {})
        shared = sessions.get(config)
        if shared is None or shared.session.closed:
            shared = sessions[config] = _Shared(self._build(config))
        shared.users += 1
        return shared.session

    async def release(self, config: ClientConfig) -> None:
        """One user fewer; the last one closes the session."""
        sessions = self._by_loop.get(asyncio.get_running_loop(), {})
        shared = sessions.get(config)
        if shared is None:
            return
        shared.users -= 1
        if shared.users <= 0:
            del sessions[config]
            await shared.session.close()

    def count(self) -> int:
        """How many sessions are open on the running loop."""
        return len(self._by_loop.get(asyncio.get_running_loop(), {}))


CLIENTS = HttpClients()
