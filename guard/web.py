"""``/healthz``, ``/readyz`` and ``/metrics`` over HTTP, inside ``guard run``.

- ``/healthz`` (liveness): the scheduler is running and its heartbeat job ticked within
  ``STALE_AFTER`` seconds, and the database takes a real write (a ``guard:healthz`` state row,
  committed). 200 or 503, with a JSON body saying which part failed.
- ``/readyz`` (readiness): the runtime has started and every enabled monitor is on the check
  schedule (``guard.checks``); a standby: it has started and waits to lead. 503 before that,
  after shutdown begins, and once a leader is deposed. It says the ``role``: leader or standby.
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
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from apscheduler.triggers.interval import IntervalTrigger
from loguru import logger

from guard import metrics
from guard.records import utcnow
from guard.runtime import Runtime, Schedule
from guard.store.state import put_state

if TYPE_CHECKING:
    from apscheduler.schedulers.asyncio import AsyncIOScheduler


HEARTBEAT = 5.0  # seconds between scheduler heartbeats
STALE_AFTER = 3 * HEARTBEAT
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
        self, guard: Runtime, scheduler: AsyncIOScheduler, checks: Schedule | None = None
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
        started = time.monotonic()
        async with self._db_lock:  # a burst of probes queues behind one write at a time
            try:
                await asyncio.wait_for(asyncio.to_thread(self._write), DB_TIMEOUT)
            except Exception as exc:
                reason = "timed out" if isinstance(exc, TimeoutError) else str(exc)[:300]
                return {"writable": False, "error": reason}
        return {"writable": True, "write_ms": round((time.monotonic() - started) * 1000, 1)}

    def _write(self) -> None:
        leadership = self.guard.leadership  # replicas each write their own row
        key = f"guard:healthz:{leadership.replica.id}" if leadership.ha else "guard:healthz"
        with self.guard.db.session() as session:
            put_state(session, key, {"at": utcnow().isoformat()})

    def readyz(self) -> Response:
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
        return _json(
            200 if ready else 503,
            {
                "status": "ready" if ready else "not ready",
                "role": role,
                "replica": leadership.replica.id,
                "fencing_token": leadership.token,
                "monitors": len(self.guard.monitors),
                "unscheduled": missing,
            },
        )

    async def route(self, method: str, path: str) -> Response:
        if path == "/healthz":
            return await self.healthz()
        if path == "/readyz":
            return self.readyz()
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
                status, ctype, body = await self.route(method, path)
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
