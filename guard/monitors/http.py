"""Probe an HTTP endpoint: status, body, latency and timeouts.

Monitors share one ``aiohttp.ClientSession`` per TLS/proxy configuration (``http_clients``, which
also says why this hot path uses aiohttp), so a monitor costs its spec and a compiled body regex,
not a connection pool and a TLS context.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any

import aiohttp
from yarl import URL

from guard.domain.records import Observation, Signal
from guard.monitors.http_clients import CLIENTS, USER_AGENT, ClientConfig, HttpClients, proxy_for
from guard.playbooks.models import HttpMonitorSpec


class HttpMonitor:
    """One URL; every check is one request, judged against the playbook's expectations."""

    type = "http"

    __slots__ = (
        "_body",
        "_client",
        "_clients",
        "_config",
        "_headers",
        "_proxy",
        "_timeout",
        "_url",
        "id",
        "interval",
        "jitter",
        "spec",
    )

    def __init__(self, spec: HttpMonitorSpec, *, clients: HttpClients | None = None) -> None:
        self.spec = spec
        self.id = spec.id
        self.interval = spec.every
        self.jitter = spec.jitter
        self._body = re.compile(spec.expect_body) if spec.expect_body else None
        self._headers = {"User-Agent": USER_AGENT, **spec.headers}
        self._config = ClientConfig(verify=spec.tls_verify, proxy=spec.proxy)
        self._proxy = proxy_for(spec.url, spec.proxy)
        self._timeout = aiohttp.ClientTimeout(total=spec.timeout)
        self._url = _parsed(spec.url)  # parsed once, not at every request
        self._clients = clients or CLIENTS
        self._client: aiohttp.ClientSession | None = None  # acquired on the first check

    def _signal(
        self,
        kind: str,
        message: str,
        *,
        ok: bool = False,
        **details: Any,
    ) -> Signal:
        return Signal(
            monitor_id=self.id,
            source="http",
            target=self.spec.url,
            kind=kind,
            message=message,
            status="ok" if ok else "firing",
            severity=self.spec.severity,
            details=details,
        )

    async def check(self, state: Mapping[str, Any]) -> Observation:
        url = self.spec.url
        started = time.perf_counter()
        if self._client is None:
            self._client = self._clients.acquire(self._config)
        try:
            async with self._client.request(
                self.spec.method,
                self._url or url,
                headers=self._headers,
                timeout=self._timeout,
                proxy=self._proxy,
                allow_redirects=False,
            ) as resp:
                status = resp.status
                body = await resp.read()  # read to the end, so the connection is reused
                charset = resp.charset
        except TimeoutError:
            return Observation(
                [
                    self._signal(
                        "http_timeout",
                        f"{url} did not answer within {self.spec.timeout:g}s",
                        timeout=self.spec.timeout,
                    )
                ]
            )
        except (aiohttp.ClientError, ValueError) as exc:  # ValueError: a URL aiohttp refuses
            reason = str(exc) or type(exc).__name__
            return Observation(
                [
                    self._signal(
                        "http_unreachable",
                        f"{url} is unreachable: {reason}",
                        error=type(exc).__name__,
                    )
                ]
            )
        latency = time.perf_counter() - started
        details: dict[str, Any] = {
            "status": status,
            "latency_ms": round(latency * 1000, 1),
        }
        if status not in self.spec.expected_statuses:
            expected = ", ".join(map(str, self.spec.expected_statuses))
            return Observation(
                [
                    self._signal(
                        "http_status",
                        f"{url} answered {status} (expected {expected})",
                        **details,
                    )
                ]
            )
        if self._body is not None and not self._body.search(_decode(body, charset)):
            return Observation(
                [
                    self._signal(
                        "http_body",
                        f"{url} body does not match {self.spec.expect_body!r}",
                        **details,
                    )
                ]
            )
        if self.spec.max_latency is not None and latency > self.spec.max_latency:
            return Observation(
                [
                    self._signal(
                        "http_slow",
                        f"{url} took {latency * 1000:.0f}ms "
                        f"(limit {self.spec.max_latency * 1000:.0f}ms)",
                        **details,
                    )
                ]
            )
        return Observation([self._signal("http_ok", f"{url} is healthy", ok=True, **details)])

    async def close(self) -> None:
        if self._client is not None:
            self._client = None
            await self._clients.release(self._config)


def _parsed(url: str) -> URL | None:
    """``url`` parsed as aiohttp would; ``None`` when it refuses it (the check then says why)."""
    try:
        return URL(url)
    except ValueError:
        return None


def _decode(body: bytes, charset: str | None) -> str:
    """The body as text: its declared charset, else UTF-8; undecodable bytes are replaced."""
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        return body.decode("utf-8", errors="replace")
