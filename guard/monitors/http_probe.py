"""A small HTTP/1.1 client for health probes: a status line, headers, a body, kept-alive sockets.

httpx cost ~1.3 ms of CPU per request on the benchmark machine (its request/response models,
anyio, and a pool that asks every idle connection two syscalls' worth of questions on each
request); 1,000 probes every 10 s spent most of a core there. A probe needs little: this speaks
HTTP/1.1 on asyncio streams (TLS with one shared ``SSLContext`` per configuration), keeps idle
connections per origin for ``KEEPALIVE`` seconds, and costs about a tenth of that. What it does
not do (a proxy, credentials in the URL, a non-ASCII host) goes through httpx instead (see
``http_clients``). Failures are raised as httpx's exceptions, so the monitor has one vocabulary.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx

KEEPALIVE = 5.0  # seconds an idle connection is kept
MAX_BODY = 1 << 20  # bytes of body read; a longer one is cut and its connection closed
MAX_HEADER_LINES = 100
LIMIT = 64 * 1024  # bytes per header line


@dataclass(frozen=True, slots=True)
class ProbeResponse:
    status_code: int
    headers: dict[str, str]
    content: bytes

    @property
    def text(self) -> str:
        ctype = self.headers.get("content-type", "")
        charset = ctype.split("charset=", 1)[1].split(";")[0].strip() if "charset=" in ctype \
            else "utf-8"
        try:
            return self.content.decode(charset, errors="replace")
        except LookupError:
            return self.content.decode("utf-8", errors="replace")


@dataclass(slots=True)
class _Conn:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    idle_since: float = field(default_factory=time.monotonic)

    def usable(self) -> bool:
        return (not self.reader.at_eof() and not self.writer.is_closing()
                and time.monotonic() - self.idle_since < KEEPALIVE)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                   "all_proxy")


def handles(url: str) -> bool:
    """Whether this client can probe ``url`` (else httpx does): no credentials in it, an ASCII
    host, and no proxy in the environment (httpx honours those)."""
    parts = urlsplit(url)
    if any(os.environ.get(v) for v in PROXY_VARIABLES):
        return False
    return (parts.scheme in ("http", "https") and parts.username is None
            and bool(parts.hostname) and (parts.hostname or "").isascii())


class ProbeClient:
    """Kept-alive connections by origin; ``request`` is one probe."""

    def __init__(self, *, verify: bool = True) -> None:
        self._ssl: ssl.SSLContext | None = None
        self._verify = verify
        self._idle: dict[tuple[str, str, int], list[_Conn]] = {}
        self.is_closed = False

    def _context(self) -> ssl.SSLContext:
        if self._ssl is None:
            import certifi

            ctx = ssl.create_default_context(cafile=certifi.where())
            if not self._verify:
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            self._ssl = ctx
        return self._ssl

    async def request(self, method: str, url: str, *, headers: dict[str, str],
                      timeout: float) -> ProbeResponse:  # noqa: ASYNC109 (httpx's signature)
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        origin = (parts.scheme, host, port)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        authority = f"[{host}]" if ":" in host else host
        if parts.port is not None:
            authority += f":{port}"
        lines = [f"{method} {target} HTTP/1.1", f"Host: {authority}", "Accept: */*",
                 *(f"{k}: {v}" for k, v in headers.items())]
        if method == "POST":
            lines.append("Content-Length: 0")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        try:
            async with asyncio.timeout(timeout):
                return await self._exchange(origin, head, method)
        except TimeoutError:
            raise httpx.ReadTimeout(f"no answer within {timeout:g}s") from None
        except (ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            raise httpx.RemoteProtocolError(f"a malformed answer: {exc}") from None
        except OSError as exc:  # ConnectionError included
            raise httpx.ReadError(exc.strerror or str(exc) or type(exc).__name__) from None

    async def _exchange(self, origin: tuple[str, str, int], head: bytes,
                        method: str) -> ProbeResponse:
        pool = self._idle.setdefault(origin, [])
        while pool:  # a kept-alive connection; the server may have closed it meanwhile
            conn = pool.pop()
            if not conn.usable():
                conn.close()
                continue
            try:
                return await self._send(conn, origin, head, method)
            except (ConnectionError, asyncio.IncompleteReadError, httpx.RemoteProtocolError):
                conn.close()  # stale: try the next one, or a new connection
        return await self._send(await self._connect(origin), origin, head, method)

    async def _connect(self, origin: tuple[str, str, int]) -> _Conn:
        scheme, host, port = origin
        try:
            reader, writer = await asyncio.open_connection(
                host, port, limit=LIMIT,
                ssl=self._context() if scheme == "https" else None,
                server_hostname=host if scheme == "https" else None)
        except ssl.SSLError as exc:
            raise httpx.ConnectError(f"TLS handshake failed: {exc.reason or exc}") from None
        except OSError as exc:
            raise httpx.ConnectError(exc.strerror or str(exc) or type(exc).__name__) from None
        return _Conn(reader, writer)

    async def _send(self, conn: _Conn, origin: tuple[str, str, int], head: bytes,
                    method: str) -> ProbeResponse:
        conn.writer.write(head)
        await conn.writer.drain()
        status_line = await conn.reader.readline()
        if not status_line:
            raise httpx.RemoteProtocolError("the server closed the connection without answering")
        parts = status_line.decode("latin-1").split(None, 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
            conn.close()
            raise httpx.RemoteProtocolError(f"not an HTTP answer: {status_line[:80]!r}")
        version, status = parts[0], int(parts[1])
        headers: dict[str, str] = {}
        for _ in range(MAX_HEADER_LINES):
            line = await conn.reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        else:
            conn.close()
            raise httpx.RemoteProtocolError("too many header lines")
        body, reusable = await self._body(conn, headers, method, status)
        keep = (reusable and version == "HTTP/1.1"
                and "close" not in headers.get("connection", "").lower())
        if keep and not self.is_closed:
            conn.idle_since = time.monotonic()
            self._idle.setdefault(origin, []).append(conn)
        else:
            conn.close()
        return ProbeResponse(status, headers, body)

    @staticmethod
    async def _body(conn: _Conn, headers: dict[str, str], method: str,
                    status: int) -> tuple[bytes, bool]:
        """The body (at most ``MAX_BODY`` bytes) and whether the connection can be reused."""
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            return b"", True
        if "chunked" in headers.get("transfer-encoding", "").lower():
            chunks: list[bytes] = []
            size = 0
            while True:
                n = int((await conn.reader.readline()).split(b";")[0].strip() or b"0", 16)
                if n == 0:
                    while (await conn.reader.readline()) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks), True
                if size + n > MAX_BODY:
                    return b"".join(chunks), False
                chunks.append(await conn.reader.readexactly(n))
                size += n
                await conn.reader.readline()
        if "content-length" in headers:
            length = int(headers["content-length"])
            if length > MAX_BODY:
                return await conn.reader.readexactly(MAX_BODY), False
            return await conn.reader.readexactly(length), True
        return await conn.reader.read(MAX_BODY), False  # until the server closes

    async def aclose(self) -> None:
        self.is_closed = True
        for pool in self._idle.values():
            for conn in pool:
                conn.close()
        self._idle.clear()
