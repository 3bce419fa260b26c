"""Container log streams read as asyncio tasks over the engine's socket, not one thread each.

A thread per followed container made 300 containers 300 threads, each blocked in a read; here
every stream is a coroutine on the monitor's loop, sharing one ``aiohttp`` session on the
engine's socket (``DOCKER_HOST``: a unix socket, or tcp with the SDK client's TLS settings).
``Demux`` splits a response body into ``(stream, bytes)``: the engine's multiplexed frames
(an 8-byte header: stream number, then length) or, for a TTY container, raw output (stdout).
It is fed whatever chunk arrived, so a read never blocks on a whole frame and a cancelled
read loses nothing.
"""

from __future__ import annotations

import ssl
import struct
from typing import Any

import aiohttp

from guard.domain.exceptions import MonitorError


def engine_session(api: Any) -> tuple[aiohttp.ClientSession, str]:
    """An ``aiohttp`` session on the engine ``api`` (the SDK's APIClient) talks to, and the
    base URL of its versioned API. Call on the loop that will use it."""
    adapter = getattr(api, "_custom_adapter", None)
    path = getattr(adapter, "socket_path", None)
    connector: aiohttp.BaseConnector
    if path:  # the SDK rewrites unix:// to http+docker://localhost and keeps the path here
        connector = aiohttp.UnixConnector(path=path, limit=0)
        base = "http://docker"
    elif str(api.base_url).startswith(("http://", "https://")):
        context: ssl.SSLContext | bool = False
        if str(api.base_url).startswith("https://"):
            verify = getattr(api, "verify", True)
            context = ssl.create_default_context(cafile=verify if isinstance(verify, str) else None)
            if verify is False:
                context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
            cert = getattr(api, "cert", None)
            if isinstance(cert, tuple):
                context.load_cert_chain(*cert)
        connector = aiohttp.TCPConnector(limit=0, ssl=context)
        base = str(api.base_url)
    else:
        raise MonitorError(
            f"container logs need DOCKER_HOST as unix:// or tcp:// (not {api.base_url})"
        )
    return aiohttp.ClientSession(connector=connector), f"{base}/v{api.api_version}"


class Demux:
    """Split a log response body, chunk by chunk, into ``(stream number, bytes)``."""

    def __init__(self, tty: bool) -> None:
        self._tty = tty
        self._buf = b""

    def feed(self, chunk: bytes) -> list[tuple[int, bytes]]:
        if self._tty:
            return [(1, chunk)] if chunk else []
        buf = self._buf + chunk if self._buf else chunk
        out: list[tuple[int, bytes]] = []
        at = 0
        while len(buf) - at >= 8:
            stream, length = struct.unpack_from(">BxxxL", buf, at)
            if len(buf) - at - 8 < length:
                break
            out.append((stream, buf[at + 8 : at + 8 + length]))
            at += 8 + length
        self._buf = buf[at:]
        return out
