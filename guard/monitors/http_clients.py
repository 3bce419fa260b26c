"""Shared HTTP clients for HTTP monitors: one ``httpx.AsyncClient`` per TLS/proxy configuration.

A client owns a connection pool and, for TLS, an ``SSLContext`` with the CA bundle loaded, which
costs hundreds of KB; a client per monitor made a thousand monitors cost most of a gigabyte.
Monitors with the same ``ClientConfig`` therefore share one client (and its pooled, kept-alive
connections); what differs per monitor (method, headers, timeout) goes on each request.

Clients belong to an event loop (their connections do), so the pool is kept per running loop.
Monitors ``acquire`` a client on their first check and ``release`` it when closed; the last
release closes the client.
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass

import httpx

USER_AGENT = "guard-monitor"
KEEPALIVE = 64  # idle connections kept per client; checks are bounded by the scheduler


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """What makes two monitors need different clients."""

    verify: bool = True  # verify the server's TLS certificate
    proxy: str | None = None  # None: the environment's HTTP(S)_PROXY, if any


@dataclass(slots=True)
class _Shared:
    client: httpx.AsyncClient
    users: int = 0


class HttpClients:
    """Refcounted ``AsyncClient``s by (running loop, ``ClientConfig``)."""

    def __init__(self, keepalive: int = KEEPALIVE) -> None:
        self.keepalive = keepalive
        self._by_loop: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[ClientConfig, _Shared]
        ] = weakref.WeakKeyDictionary()

    def _build(self, config: ClientConfig) -> httpx.AsyncClient:
        # No cap on connections: a check waiting for a pooled connection would time out as if
        # its endpoint had; how many checks run at once is ``scheduler.max_concurrent_checks``.
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=self.keepalive)
        return httpx.AsyncClient(
            verify=config.verify,
            proxy=config.proxy,
            limits=limits,
            follow_redirects=False,
            headers={"User-Agent": USER_AGENT},
        )

    def acquire(self, config: ClientConfig) -> httpx.AsyncClient:
        """The shared client for ``config`` on the running loop; pair with ``release``."""
        clients = self._by_loop.setdefault(asyncio.get_running_loop(), {})
        shared = clients.get(config)
        if shared is None or shared.client.is_closed:
            shared = clients[config] = _Shared(self._build(config))
        shared.users += 1
        return shared.client

    async def release(self, config: ClientConfig) -> None:
        """One user fewer; the last one closes the client."""
        clients = self._by_loop.get(asyncio.get_running_loop(), {})
        shared = clients.get(config)
        if shared is None:
            return
        shared.users -= 1
        if shared.users <= 0:
            del clients[config]
            await shared.client.aclose()

    def count(self) -> int:
        """How many clients are open on the running loop."""
        return len(self._by_loop.get(asyncio.get_running_loop(), {}))


CLIENTS = HttpClients()
