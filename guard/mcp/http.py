"""MCP over streamable HTTP at ``/mcp`` on Guard's web server, behind a bearer token.

Every request must carry ``Authorization: Bearer <token>`` (``guard access token create``);
a wrong, malformed or revoked token gets 401, and past ``Limiter``'s wrong tokens a minute
per client address, 429 (the web console's limit; the address is the TCP peer, or a listed
trusted proxy's last ``X-Forwarded-For`` hop: ``guard.access.proxies``). The token's name is
the actor (``token:NAME``); its role is read from the store at each call, so a revoked token
stops at once. A session is bound to the token that opened it (the SDK answers 404 to another).
The SDK's session manager runs in a task of Guard's loop, started with the first request.
A token holds at most ``access.mcp_sessions_per_token`` sessions (``guard.mcp.sessions``).

Before the token, the ``Origin`` header (the MCP spec: a server must check it, against DNS
rebinding and other sites' pages): a request without one (a CLI agent, not a browser) goes
on; one from Guard's own origin (``http(s)://`` + its ``Host``) or from
``access.mcp_allowed_origins`` too; any other gets 403 naming that setting. The SDK's
``TransportSecuritySettings`` does not fit: it wants every ``Host`` Guard may be reached by
listed in advance, and answers plain text that names no fix.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from loguru import logger
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from guard.access.policy import TOKEN, RolePolicy
from guard.access.proxies import Proxies
from guard.access.tokens import verify_token
from guard.config.safety import origin_key
from guard.incidents.gate import Actor, Gate
from guard.mcp.server import build_server
from guard.mcp.service import GuardTools, Parts
from guard.mcp.sessions import CappedSessions
from guard.web.console.signin import Limiter

if TYPE_CHECKING:
    from starlette.routing import BaseRoute
    from starlette.types import Receive, Scope, Send

PATH = "/mcp"
IDLE = 30 * 60.0  # seconds an idle session lives


def token_gate(parts: Parts) -> Gate:
    """The gate for token actors: the live token's role, nothing else."""
    return Gate([RolePolicy(trusted={}, tokens=parts.db)])


class MCPEndpoint:
    """The ASGI app at ``/mcp``."""

    def __init__(self, tools: GuardTools, *, version: str = "", limiter: Limiter | None = None):
        self.tools = tools
        self.limiter = limiter or Limiter()
        self.proxies = Proxies.of(tools.parts.settings.access)
        allowed = tools.parts.settings.access.mcp_allowed_origins
        self.origins = {key for o in allowed if (key := origin_key(o)) is not None}
        self.server = build_server(tools, self.actor_of, version=version)
        cap = tools.parts.settings.access.mcp_sessions_per_token
        self.manager = CappedSessions(self.server, tools.db, cap, idle=IDLE)
        self._task: asyncio.Task[None] | None = None
        self._started: asyncio.Event | None = None

    @staticmethod
    def actor_of(ctx: Any) -> Actor:
        """The token that signed the request carrying this message."""
        user = ctx.request.scope.get("user") if ctx.request is not None else None
        if not isinstance(user, AuthenticatedUser):  # every request is checked before
            raise PermissionError("no token")
        return Actor(TOKEN, user.access_token.client_id)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = dict(scope.get("headers") or [])
        if (refused := self.foreign_origin(headers)) is not None:
            logger.warning("mcp: refused a request from origin {!r}", refused[:200])
            await _refuse(
                send,
                403,
                f"origin {refused[:200]!r} may not call {PATH}: a web page of another site. "
                "If it should, add it to access.mcp_allowed_origins in Guard's config",
            )
            return
        client = scope.get("client")
        forwarded = [
            v.decode("latin-1") for k, v in scope.get("headers") or [] if k == b"x-forwarded-for"
        ]
        address = self.proxies.client(str(client[0]) if client else None, forwarded)
        wait = self.limiter.retry_after(address)
        if wait is not None:
            await _refuse(send, 429, f"too many wrong tokens; try again in {wait} s", wait)
            return
        scheme, _, secret = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        name = None
        if scheme.lower() == "bearer" and secret.strip():
            found = await asyncio.to_thread(verify_token, self.tools.db, secret.strip())
            name = found.name if found is not None else None
        if name is None:
            self.limiter.failed(address)
            await _refuse(
                send,
                401,
                "send 'Authorization: Bearer TOKEN' with a live token "
                "(`guard access token create NAME --role ROLE`)",
            )
            return
        scope["user"] = AuthenticatedUser(AccessToken(token=name, client_id=name, scopes=[]))
        await self._running()
        if b"mcp-session-id" in headers:
            await self.manager.handle_request(scope, receive, send)
        elif (full := self.manager.refused(name)) is not None:
            await _refuse(send, 429, full)
        else:
            await self.manager.open(name, scope, receive, send)

    def foreign_origin(self, headers: dict[bytes, bytes]) -> str | None:
        """The request's ``Origin`` if it may not call (None: no Origin, Guard's own, or
        one of ``access.mcp_allowed_origins``)."""
        if b"origin" not in headers:
            return None
        origin = headers[b"origin"].decode("latin-1")
        key = origin_key(origin)
        if key is None:  # "null" (a sandboxed frame, a file), or not an origin at all
            return origin
        host = headers.get(b"host", b"").decode("latin-1")
        if key in self.origins or (host and origin_key(f"{key[0]}://{host}") == key):
            return None
        return origin

    async def _running(self) -> None:
        """Start the SDK's session manager in its own task, once."""
        if self._started is None:
            self._started = started = asyncio.Event()

            async def run() -> None:
                async with self.manager.run():
                    started.set()
                    await self.manager.sweeping()  # until Guard's loop ends

            self._task = asyncio.create_task(run(), name="mcp-sessions")
        await self._started.wait()

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


async def _refuse(send: Send, status: int, message: str, retry: int | None = None) -> None:
    body = json.dumps({"error": message}).encode() + b"\n"
    headers = [(b"content-type", b"application/json"), (b"cache-control", b"no-store")]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="guard"'))
    if retry is not None:
        headers.append((b"retry-after", str(retry).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def endpoint(parts: Parts, *, version: str = "") -> MCPEndpoint:
    """The ``/mcp`` app over ``parts`` (the running Guard's agent)."""
    return MCPEndpoint(GuardTools(parts, token_gate(parts)), version=version)


def mcp_routes(parts: Parts, *, version: str = "") -> list[BaseRoute]:
    """The ``/mcp`` route over ``parts``, its SDK loaded now (``guard.mcp.lazy`` defers it)."""
    from starlette.routing import Route

    return [Route(PATH, endpoint=endpoint(parts, version=version))]
