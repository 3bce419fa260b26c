"""``/healthz``, ``/readyz`` and ``/metrics`` over HTTP, inside ``guard run``.

- ``/healthz`` (liveness): the scheduler is running and its heartbeat job ticked within
  ``STALE_AFTER`` seconds, and the database takes a real write (a ``guard:healthz`` state row,
  committed). 200 or 503, with a JSON body saying which part failed. The write is made at most
  once per ``PROBE_EVERY`` however often the endpoint is asked (it needs no credentials, so a
  flood of probes must not become a flood of writes): requests in between get the last result
  and its age, and while a write hangs no second one starts.
- ``/readyz`` (readiness): the runtime has started and every enabled monitor is on the check
  schedule (``guard.checks``); a standby: it has started and waits to lead. 503 before that,
  after shutdown begins, and once a leader is deposed. It says the ``role``: leader or standby;
  the replica id, fencing token and monitors only to a client on loopback (the port listens on
  every interface by default).
- ``/metrics``: ``guard.metrics.REGISTRY`` in Prometheus' text format.

The server is the standard library's ``asyncio.start_server`` with a deliberately tiny HTTP/1.1
reader: three read-only GETs, no bodies, ``Connection: close``, 5 s to send a request, 8 KiB per
line. aiohttp or starlette+uvicorn would bring a router, middleware, and ~10-20 MB of
imports for nothing Guard uses; the probes and Prometheus need only this. Database work runs
in a worker thread so a slow disk never blocks the event loop. If the port cannot be bound the
error is logged and Guard keeps monitoring: the orchestrator's failing health check is the
alarm, and the appliance does not stop watching because of its own endpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from apscheduler.triggers.interval import IntervalTrigger
from loguru import logger

from guard import metrics
from guard.plainhttp import is_loopback
from guard.records import utcnow
from guard.runtime import Runtime, Schedule
from guard.store.state import put_state

if TYPE_CHECKING:
    from apscheduler.schedulers.asyncio import AsyncIOScheduler


HEARTBEAT = 5.0  # seconds between scheduler heartbeats
STALE_AFTER = 3 * HEARTBEAT
PROBE_EVERY = HEARTBEAT  # seconds: /healthz writes to the database at most this often
DB_TIMEOUT = 5.0
REQUEST_DEADLINE = 5.0
MAX_REQUEST_BYTES = 8192
MAX_HEADERS = 64
JSON = "application/json"

Response = tuple[int, str, bytes]


def _json(status: int, body: dict[str, Any]) -> Response:
    return status, JSON, json.dumps(body).encode() + b"\n"


class WebServer:
    """The HTTP endpoint of one running Guard (a ``Runtime``); ``close()`` is safe before
    ``start()``."""

    def __init__(
        self,
        guard: Runtime,
        scheduler: AsyncIOScheduler,
        checks: Schedule | None = None,
        *,
        probe_every: float = PROBE_EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.guard = guard
        self.scheduler = scheduler
        self.checks = checks
        self.host = guard.settings.http_host
        self.port = guard.settings.http_port
        self._server: asyncio.Server | None = None
        self._beat_at: float | None = None
        self._ready = False
        self._db_lock = asyncio.Lock()
        self.probe_every = probe_every
        self._clock = clock
        self._probe: tuple[float, dict[str, Any]] | None = None  # when, and what it found
        self._writing: asyncio.Future[None] | None = None  # the write in a worker thread

    async def start(self) -> None:
        """Schedule the heartbeat, then listen; called once monitors are scheduled."""
        metrics.track_incidents(self.guard.db)
        self.scheduler.add_job(
            self._beat,
            IntervalTrigger(seconds=HEARTBEAT),
            id="guard:heartbeat",
            coalesce=True,
            max_instances=1,
            misfire_grace_time=int(HEARTBEAT),
            next_run_time=utcnow(),
        )
        self._ready = True
        try:
            self._server = await asyncio.start_server(
                self._handle, self.host, self.port, limit=MAX_REQUEST_BYTES
            )
        except OSError as exc:
            logger.error(
                "cannot serve /healthz and /metrics on {}:{}: {} (set PORT or "
                "GUARD_HTTP_PORT to a free port); monitoring continues",
                self.host,
                self.port,
                exc.strerror or exc,
            )
            return
        bound = self._server.sockets[0].getsockname()
        self.port = int(bound[1])
        logger.info("serving /healthz, /readyz and /metrics on http://{}:{}", self.host, self.port)

    async def close(self) -> None:
        self._ready = False
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)
            self._server = None

    async def _beat(self) -> None:
        self._beat_at = time.monotonic()
        metrics.beat()

    # -- the checks -----------------------------------------------------------------------------

    async def healthz(self) -> Response:
        scheduler: dict[str, Any] = {"running": bool(self.scheduler.running)}
        age = None if self._beat_at is None else time.monotonic() - self._beat_at
        scheduler["heartbeat_age_seconds"] = None if age is None else round(age, 3)
        scheduler_ok = scheduler["running"] and age is not None and age <= STALE_AFTER
        database = await self._write_probe()
        ok = scheduler_ok and database["writable"]
        return _json(
            200 if ok else 503,
            {"status": "ok" if ok else "failing", "scheduler": scheduler, "database": database},
        )

    async def _write_probe(self) -> dict[str, Any]:
        async with self._db_lock:  # a burst of probes queues behind one write at a time
            if self._probe is None or self._clock() - self._probe[0] >= self.probe_every:
                found = await self._probe_once()
                self._probe = (self._clock(), found)  # the interval starts once it is known
            at, found = self._probe
        return {**found, "age_seconds": round(max(self._clock() - at, 0.0), 3)}

    async def _probe_once(self) -> dict[str, Any]:
        """One real write, unless the last one is still stuck (a thread cannot be cancelled)."""
        if self._writing is not None and not self._writing.done():
            return {"writable": False, "error": "timed out (the last write has not returned)"}
        started = time.monotonic()
        self._writing = asyncio.ensure_future(asyncio.to_thread(self._write))
        self._writing.add_done_callback(_retrieve)  # a late failure is not "never retrieved"
        try:
            await asyncio.wait_for(asyncio.shield(self._writing), DB_TIMEOUT)
        except Exception as exc:
            reason = "timed out" if isinstance(exc, TimeoutError) else str(exc)[:300]
            return {"writable": False, "error": reason}
        return {"writable": True, "write_ms": round((time.monotonic() - started) * 1000, 1)}

    def _write(self) -> None:
        leadership = self.guard.leadership  # replicas each write their own row
        key = f"guard:healthz:{leadership.replica.id}" if leadership.ha else "guard:healthz"
        with self.guard.db.session() as session:
            put_state(session, key, {"at": utcnow().isoformat()})

    def readyz(self, *, local: bool = False) -> Response:
        """Readiness; the details only for ``local`` (loopback) clients."""
        leadership = self.guard.leadership
        role = leadership.role
        missing = [
            m.id
            for m in self.guard.monitors
            if self.checks is None or not self.checks.scheduled(m.id)
        ]
        if role != "leader":  # a standby is ready to take over; its monitors wait until then
            missing = []
        ready = self._ready and bool(self.scheduler.running) and not missing and role != "deposed"
        body: dict[str, Any] = {"status": "ready" if ready else "not ready", "role": role}
        if local:
            body |= {
                "replica": leadership.replica.id,
                "fencing_token": leadership.token,
                "monitors": len(self.guard.monitors),
                "unscheduled": missing,
            }
        return _json(200 if ready else 503, body)

    async def route(self, method: str, path: str, *, local: bool = False) -> Response:
        if path == "/healthz":
            return await self.healthz()
        if path == "/readyz":
            return self.readyz(local=local)
        if path == "/metrics":
            body = await asyncio.to_thread(metrics.render)
            return 200, metrics.CONTENT_TYPE_LATEST, body
        return _json(404, {"error": f"no such path {path}; try /healthz, /readyz, /metrics"})

    # -- HTTP -----------------------------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(REQUEST_DEADLINE):
                method, path = await _read_request(reader)
            if method not in ("GET", "HEAD"):
                status, ctype, body = _json(405, {"error": "only GET and HEAD"})
            else:  # bounded by DB_TIMEOUT
                peer = writer.get_extra_info("peername")
                local = isinstance(peer, tuple) and is_loopback(str(peer[0]))
                status, ctype, body = await self.route(method, path, local=local)
            head = (
                f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
                f"Content-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                "Cache-Control: no-store\r\nConnection: close\r\n\r\n"
            )
            writer.write(head.encode() + (b"" if method == "HEAD" else body))
            async with asyncio.timeout(REQUEST_DEADLINE):
                await writer.drain()
        except (
            TimeoutError,
            ConnectionError,
            ValueError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
        ):
            pass  # a slow, broken or oversized request just gets the connection closed
        except Exception:
            logger.exception("the health endpoint failed a request")
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


def _retrieve(done: asyncio.Future[None]) -> None:
    if not done.cancelled():
        done.exception()


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str]:
    """The method and path of one request; the headers are read and ignored."""
    line = (await reader.readuntil(b"\n")).decode("latin-1").split()
    if len(line) != 3 or not line[2].startswith("HTTP/"):
        raise ValueError("not an HTTP request line")
    for _ in range(MAX_HEADERS):
        if (await reader.readuntil(b"\n")).strip() == b"":
            break
    else:
        raise ValueError("too many headers")
    path = line[1].split("?", 1)[0]
    return line[0].upper(), path
