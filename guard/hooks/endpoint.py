"""``POST /hooks/<id>``: one alert notification in, its signals stored, then 2xx.

In order, each refusal before any work the next one would cost:

- 404: no source has that id; 413: a ``Content-Length`` over ``MAX_BODY``;
- 401: a wrong or missing bearer token (before the body is read);
- with an HMAC: 413, a body that grows past ``MAX_BODY`` (never read further); 401, a wrong
  signature, or a signed timestamp outside ``replay_window`` (``guard.hooks.replay``);
- 429: past the source's ``rate`` of alerts (``Retry-After`` says when to come back). Only an
  authenticated request reaches the budget: a flood of forged ones never spends the sender's;
- 409: a signed request already taken within the replay window (a replay);
- 400: not JSON, or a field of the payload missing or wrong (the answer names it);
- 200 once every signal of the notification is stored (the same intake and triage path as
  monitors' signals, ``Intake.submit``); 503 if that does not happen within ``STORE_WAIT``
  (the store is away, the replica is a standby): the sender retries, and the retry is a
  redelivery that counts once (``guard.triage.redelivery``). Nothing answered 2xx is lost.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from loguru import logger

from guard.access.proxies import Proxies
from guard.domain.records import Observation
from guard.hooks.guards import RateLimit, Refusals, authentic, given_signature
from guard.hooks.mapping import BadPayload, Mapper
from guard.hooks.replay import Replays
from guard.ports.running import Runtime
from guard.store import audit
from guard.telemetry import metrics

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

MAX_BODY = 1024 * 1024  # bytes
STORE_WAIT = 8.0  # seconds a hook waits for its signals to be stored before answering 503


class Hooks:
    """The ``intake:`` sources of one running Guard, as HTTP handlers."""

    def __init__(self, guard: Runtime, proxies: Proxies | None = None) -> None:
        self.guard = guard
        self.proxies = proxies or Proxies.of(guard.settings.access)
        self.sources = {s.id: s for s in guard.settings.intake}
        self._mappers = {i: Mapper(s) for i, s in self.sources.items()}
        self._limits = {i: RateLimit.of(s) for i, s in self.sources.items()}
        self._refusals = {i: Refusals(i) for i in self.sources}
        self._replays = {i: Replays.of(s) for i, s in self.sources.items()}
        self.store_wait = STORE_WAIT

    async def handle(self, request: Request) -> Response:
        hook_id = str(request.path_params["hook_id"])
        answer = await self._handle(hook_id, request)
        metrics.count_intake(hook_id if hook_id in self.sources else "unknown", answer.status_code)
        return answer

    async def _handle(self, hook_id: str, request: Request) -> Response:
        source = self.sources.get(hook_id)
        if source is None:
            return _answer(404, f"no intake source {hook_id!r} (see intake: in the config)")
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
            return _answer(413 if length.isdigit() else 400, _length_problem(length))
        if not authentic(source, request.headers, None):
            return await self._refuse(hook_id, request)
        body, signed_at = None, None
        if source.hmac_secret is not None:  # authenticated in full before the rate is asked
            body = await _read(request)
            if body is None:
                return _answer(413, f"body: over {MAX_BODY} bytes")
            if not authentic(source, request.headers, body):
                return await self._refuse(hook_id, request)
            replays = self._replays[hook_id]
            if replays is not None:
                signed_at, stale = replays.signed_at(request.headers)
                if stale is not None:
                    return await self._refuse(hook_id, request, stale)
        if not self._limits[hook_id].allow():
            return _answer(429, f"more than {source.rate} alerts (burst {source.burst})", retry=1)
        if body is None:
            body = await _read(request)
            if body is None:
                return _answer(413, f"body: over {MAX_BODY} bytes")
        sig = given_signature(source, request.headers)
        replays = self._replays[hook_id]
        if replays is not None and not replays.take(sig):
            return _answer(409, "a replay: this signed request was already taken; not applied")
        answer = await self._store(hook_id, body, signed_at)
        if replays is not None and answer.status_code >= 500:
            replays.give_back(sig)  # not stored: the sender's retry is no replay
        return answer

    async def _store(self, hook_id: str, body: bytes, signed_at: float | None) -> Response:
        try:
            signals = self._mappers[hook_id].signals(json.loads(body), signed_at)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            return _answer(400, f"body: not JSON ({exc})")
        except BadPayload as exc:
            return _answer(400, str(exc))
        self._limits[hook_id].charge(len(signals))
        if signals and not await self.guard.intake.submit(Observation(signals), self.store_wait):
            logger.warning("intake {}: {} alert(s) not stored in time: 503", hook_id, len(signals))
            return _answer(503, "not stored; retry later", retry=5)
        return _json(200, {"stored": len(signals)})

    async def _refuse(
        self, hook_id: str, request: Request, why: str = "wrong or missing credential"
    ) -> Response:
        host = request.client.host if request.client else None
        peer = self.proxies.client(host, request.headers.getlist("x-forwarded-for")) or "?"
        told = self._refusals[hook_id].refuse(peer)
        if told is not None:
            try:
                await asyncio.to_thread(self._audit, hook_id, told)
            except Exception:
                logger.exception("intake {}: could not audit refused credentials", hook_id)
        return _answer(401, why, auth=True)

    def _audit(self, hook_id: str, data: dict[str, Any]) -> None:
        with self.guard.db.session() as session:
            audit.append(
                session,
                actor="intake",
                action="intake.unauthorized",
                subject=f"intake:{hook_id}",
                data=data,
            )


async def _read(request: Request) -> bytes | None:
    """The body, or None once it passes ``MAX_BODY`` (the rest is never read)."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            return None
    return bytes(body)


def _length_problem(length: str) -> str:
    return f"body: over {MAX_BODY} bytes" if length.isdigit() else "Content-Length: not a number"


def _json(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Response:
    from starlette.responses import JSONResponse

    return JSONResponse(body, status_code=status, headers=headers)


def _answer(status: int, error: str, *, retry: int = 0, auth: bool = False) -> Response:
    headers = {"Retry-After": str(retry)} if retry else {}
    if auth:
        headers["WWW-Authenticate"] = 'Bearer realm="guard"'
    return _json(status, {"error": error}, headers)
