"""Open MCP sessions, counted per token: one token cannot take every session.

The SDK caps the sessions of all clients together (10,000) and none per client, so one token
could open them all and hold them until they idle out (30 minutes), after its revocation too,
while every other client got 503. ``CappedSessions`` counts each token's open sessions: a request
that would open one more than ``access.mcp_sessions_per_token`` is refused (429, naming the
setting) before it reaches the SDK, and a sweep every ``SWEEP`` seconds closes the sessions
of a token revoked meanwhile, so their places return (its requests are refused from the
first one on anyway: ``guard.mcp.http``).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import TYPE_CHECKING, Any

from loguru import logger
from mcp.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from prometheus_client import Gauge

from guard.access.tokens import role_of
from guard.store.db import Database
from guard.telemetry.metrics import REGISTRY

if TYPE_CHECKING:
    from starlette.types import Message, Receive, Scope, Send

SWEEP = 5.0  # seconds between looks for revoked tokens' sessions
OPEN = Gauge("guard_mcp_sessions", "MCP sessions open over HTTP", registry=REGISTRY)


class CappedSessions(StreamableHTTPSessionManager):
    """The SDK's session manager, its sessions counted by the token that opened them (a
    subclass: the SDK has no public list of its sessions, nor a way to close one)."""

    def __init__(self, app: Server[Any], db: Database, cap: int, *, idle: float) -> None:
        super().__init__(app=app, session_idle_timeout=idle)
        self.db = db
        self.cap = cap
        self._of: dict[str, set[str]] = {}  # token name -> ids of the sessions it opened
        self._opening: Counter[str] = Counter()  # opening requests in flight, per token
        OPEN.set_function(lambda: len(self._server_instances))

    def held(self, name: str) -> set[str]:
        """The ids of token ``name``'s sessions still open."""
        open_ = self._server_instances  # the SDK forgets a session that ended
        ids = {i for i in self._of.get(name, ()) if i in open_}
        if ids:
            self._of[name] = ids
        else:
            self._of.pop(name, None)
        return ids

    def refused(self, name: str) -> str | None:
        """Why token ``name`` may not open another session now (None: it may)."""
        count = len(self.held(name)) + self._opening[name]
        if count < self.cap:
            return None
        return (
            f"token {name} has {count} open MCP sessions, the most "
            f"access.mcp_sessions_per_token ({self.cap}) allows: end one (an MCP client "
            "sends DELETE with its mcp-session-id when it closes) or wait until one idles out"
        )

    async def open(self, name: str, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve a request that opens a session for ``name`` (checked by ``refused``),
        noting the session's id if the SDK opened one."""
        self._opening[name] += 1
        opened: list[str] = []

        async def noted(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                headers = {k.lower(): v for k, v in message.get("headers") or []}
                if session := headers.get(b"mcp-session-id"):
                    opened.append(session.decode("latin-1"))
            await send(message)

        try:
            await self.handle_request(scope, receive, noted)
        finally:
            self._opening[name] -= 1
            if not self._opening[name]:
                del self._opening[name]
            self._of.setdefault(name, set()).update(opened)

    async def sweeping(self) -> None:
        """Close revoked tokens' sessions every ``SWEEP`` seconds, until cancelled."""
        while True:
            await asyncio.sleep(SWEEP)
            try:
                await self.sweep()
            except Exception as exc:  # the next sweep tries again
                logger.opt(exception=exc).error("mcp: the session sweep failed")

    async def sweep(self) -> None:
        """Close the sessions of every token that is no longer live."""
        for name in list(self._of):
            if not (ids := self.held(name)):
                continue
            if await asyncio.to_thread(role_of, self.db, name) is not None:
                continue
            for session in ids:
                transport = self._server_instances.get(session)
                if transport is not None:  # forgotten first: its id answers 404 from now on
                    await self._discard_session(session, transport)
            self._of.pop(name, None)
            logger.warning(
                "mcp: closed {} MCP sessions of token {}: it was revoked", len(ids), name
            )
