"""Guard's web stack: ``/healthz``, ``/readyz``, ``/metrics`` and the hooks, in ``guard run``.

- ``/healthz`` (liveness): the scheduler is running and its heartbeat job ticked within
  ``STALE_AFTER`` seconds, and the database takes a real write (a ``guard:healthz`` state row,
  committed). 200 or 503, with a JSON body saying which part failed. The write is made at most
  once per ``PROBE_EVERY`` however often the endpoint is asked (it needs no credentials, so a
  flood of probes must not become a flood of writes): requests in between get the last result
  and its age, and while a write hangs no second one starts.
- ``/readyz`` (readiness): the runtime has started and every enabled monitor is on the check
  schedule (``guard.app.checks``); a standby: it has started and waits to lead. 503 before that,
  after shutdown begins, and once a leader is deposed. It says the ``role``: leader or standby;
  the replica id, fencing token, monitors and ``capabilities`` (what works here: ``guard
  doctor``'s list, refreshed every minute) only to a client on loopback (the port listens on
  every interface by default), not to one an unlisted proxy relayed (``X-Forwarded-For``).
- ``/metrics``: ``guard.telemetry.metrics.REGISTRY`` in Prometheus' text format.
- ``POST /hooks/<id>``: the ``intake:`` sources (``guard.hooks``).
- the web console's pages (``guard.web.console``, docs/WEB.md) and MCP at ``/mcp`` (``guard.mcp``,
  docs/MCP.md): routes the wiring layer passes in.

The server is Starlette served by uvicorn, run as a task of Guard's own event loop (no signal
handlers of its own: Guard's SIGTERM stops it; no access log; no proxy headers of its own: the
client is the TCP peer unless ``access.trusted_proxies`` lists it, ``guard.access.proxies``).
Both are imported only when the server starts, so ``guard`` CLI commands never pay for them.
Probes answer ``Connection: close`` as before. Database work runs in a worker thread so a slow
disk never blocks the event loop. If the port cannot be bound the error is logged and Guard
keeps monitoring: the orchestrator's failing health check is the alarm, and the appliance does
not stop watching because of its own endpoint. docs/ARCHITECTURE.md says why this stack.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from apscheduler.triggers.interval import IntervalTrigger
from loguru import logger

from guard.access.proxies import Proxies
from guard.domain.records import utcnow
from guard.hooks import Hooks
from guard.ports.running import Runtime, Schedule
from guard.store.state import put_state
from guard.telemetry import metrics
from guard.util.plainhttp import is_loopback

if TYPE_CHECKING:
    from apscheduler.schedulers.asyncio import AsyncIOScheduler
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response as HTTPResponse
    from starlette.routing import BaseRoute


HEARTBEAT = 5.0  # seconds between scheduler heartbeats
STALE_AFTER = 3 * HEARTBEAT
PROBE_EVERY = HEARTBEAT  # seconds: /healthz writes to the database at most this often
DB_TIMEOUT = 5.0
STARTUP = 10.0  # seconds to wait for the server to listen
SHUTDOWN = 5.0  # seconds in-flight requests get to finish on the way out
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
        routes: Sequence[BaseRoute] = (),
    ) -> None:
        self.guard = guard
        self.routes = list(routes)  # more pages (the web console), from the wiring layer
        self.scheduler = scheduler
        self.checks = checks
        self.host = guard.settings.http_host
        self.port = guard.settings.http_port
        self._server: Any = None  # a uvicorn.Server, once started
        self._serving: asyncio.Task[None] | None = None
        self.proxies = Proxies.of(guard.settings.access)
        self.hooks = Hooks(guard, self.proxies)
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
            sock = _bind(self.host, self.port)
        except OSError as exc:
            logger.error(
                "cannot serve /healthz and /metrics on {}:{}: {} (set PORT or "
                "GUARD_HTTP_PORT to a free port); monitoring continues",
                self.host,
                self.port,
                exc.strerror or exc,
            )
            return
        self.port = int(sock.getsockname()[1])
        self._server = _server(self.app())
        self._serving = asyncio.create_task(self._server.serve(sockets=[sock]), name="web")
        deadline = time.monotonic() + STARTUP
        while not self._server.started and not self._serving.done():
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(0.01)
        if self._serving.done():  # it could not start: logged, and monitoring goes on
            failed = self._serving.exception() if not self._serving.cancelled() else None
            logger.error("the web server did not start: {}; monitoring continues", failed)
            return
        paths = (
            "/healthz, /readyz, /metrics and /hooks"
            if self.hooks.sources
            else "/healthz, /readyz and /metrics"  # as before the hooks: log readers match it
        )
        logger.info("serving {} on http://{}:{}", paths, self.host, self.port)
        if self.routes:
            logger.info("web console on http://{}:{}/ (docs/WEB.md)", self.host, self.port)
        if any(getattr(r, "path", None) == "/mcp" for r in self.routes):
            logger.info("MCP on http://{}:{}/mcp (docs/MCP.md)", self.host, self.port)

    async def close(self) -> None:
        self._ready = False
        for route in self.routes:  # a mounted app with sessions (MCP) ends them first
            aclose = getattr(getattr(route, "app", None), "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()
        server, serving = self._server, self._serving
        self._server = self._serving = None
        if server is None or serving is None:
            return
        server.should_exit = True  # finishes in-flight requests, then returns
        try:  # uvicorn gives in-flight requests SHUTDOWN seconds; this waits a little longer
            await asyncio.wait_for(asyncio.shield(serving), SHUTDOWN + 2)
        except Exception:
            server.force_exit = True
            serving.cancel()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await serving

    def app(self) -> Starlette:
        """The ASGI app: probes, metrics, the hooks and the routes passed in (the console)."""
        from starlette.applications import Starlette
        from starlette.routing import Route

        return Starlette(
            routes=[
                Route("/healthz", self._healthz_route, methods=["GET"]),
                Route("/readyz", self._readyz_route, methods=["GET"]),
                Route("/metrics", self._metrics_route, methods=["GET"]),
                Route("/hooks/{hook_id}", self.hooks.handle, methods=["POST"]),
                *self.routes,
            ],
            exception_handlers={404: _not_found, 405: _not_allowed},
        )

    async def _healthz_route(self, request: Request) -> HTTPResponse:
        return _respond(await self.healthz())

    async def _readyz_route(self, request: Request) -> HTTPResponse:
        peer = request.client.host if request.client else None
        forwarded = request.headers.getlist("x-forwarded-for")
        client = self.proxies.client(peer, forwarded)
        local = is_loopback(client) and not self.proxies.relayed(peer, forwarded)
        return _respond(self.readyz(local=local))

    async def _metrics_route(self, request: Request) -> HTTPResponse:
        body = await asyncio.to_thread(metrics.render)
        return _respond((200, metrics.CONTENT_TYPE_LATEST, body))

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
                # what works here (guard.app.capabilities), looked at on a timer, not now
                "capabilities": list(getattr(self.guard, "capabilities", [])),
            }
        return _json(200 if ready else 503, body)


def _respond(found: Response) -> HTTPResponse:
    from starlette.responses import Response as HTTPResponse

    status, ctype, body = found  # probes close the connection, as they always have
    headers = {"Cache-Control": "no-store", "Connection": "close"}
    return HTTPResponse(body, status_code=status, media_type=ctype, headers=headers)


async def _not_found(request: Request, exc: Exception) -> HTTPResponse:
    path = request.url.path
    return _respond(_json(404, {"error": f"no such path {path}; try /healthz, /readyz, /metrics"}))


async def _not_allowed(request: Request, exc: Exception) -> HTTPResponse:
    allow = str((getattr(exc, "headers", None) or {}).get("Allow", ""))  # Starlette's route says
    allowed = " and ".join(m.strip() for m in allow.split(",") if m.strip()) or "GET and HEAD"
    return _respond(_json(405, {"error": f"only {allowed}"}))


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (0: any free port), bound here so a taken port is
    known at once and the bound port can be read back."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def _server(app: Starlette) -> Any:
    """A uvicorn server for ``app`` that leaves signals to Guard and logs through loguru."""
    import uvicorn

    class Server(uvicorn.Server):
        def install_signal_handlers(self) -> None:  # older uvicorn
            pass

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:  # Guard's SIGTERM handler stops it
            yield

    _uvicorn_logs_to_loguru()
    config = uvicorn.Config(
        app,
        lifespan="off",
        log_config=None,
        access_log=False,
        server_header=False,
        proxy_headers=False,  # uvicorn would trust X-Forwarded-For from 127.0.0.1: Guard decides
        timeout_keep_alive=5,
        ws="none",  # Guard serves no websocket: none of uvicorn's websocket libraries is loaded
        timeout_graceful_shutdown=int(SHUTDOWN),
    )
    return Server(config)


class _ToLoguru(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        level = "ERROR" if record.levelno >= logging.ERROR else "DEBUG"
        logger.opt(exception=record.exc_info).log(level, "web: {}", record.getMessage())


def _uvicorn_logs_to_loguru() -> None:
    """uvicorn's own messages go to loguru (and its redaction); all but errors at debug."""
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        log = logging.getLogger(name)
        if not any(isinstance(h, _ToLoguru) for h in log.handlers):
            log.handlers = [_ToLoguru()]
        log.propagate = False


def _retrieve(done: asyncio.Future[None]) -> None:
    if not done.cancelled():
        done.exception()
