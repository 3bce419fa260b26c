"""``/mcp`` without its cost at start-up: the MCP SDK loads on the first request.

Importing the SDK takes about a second (more on a busy box), which every ``guard run`` would
pay before its monitors start, most of them for an endpoint nobody calls. ``LazyMCP`` is the
ASGI app the web server mounts at ``/mcp``: its first request imports ``guard.mcp.http`` off
the event loop and builds the real endpoint; every request after goes straight to it.
"""

from __future__ import annotations

import asyncio
import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.routing import BaseRoute
    from starlette.types import Receive, Scope, Send

    from guard.mcp.service import Parts

PATH = "/mcp"


class LazyMCP:
    """The ASGI app at ``/mcp``, built on its first request (see the module's docstring)."""

    def __init__(self, parts: Parts, *, version: str = "") -> None:
        self.parts = parts
        self.version = version
        self.endpoint: Any = None
        self._lock = asyncio.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.endpoint is None:
            async with self._lock:
                if self.endpoint is None:
                    http = await asyncio.to_thread(importlib.import_module, "guard.mcp.http")
                    self.endpoint = http.endpoint(self.parts, version=self.version)
        await self.endpoint(scope, receive, send)

    async def aclose(self) -> None:
        """End the MCP sessions (before the web server stops), if any were opened."""
        if self.endpoint is not None:
            await self.endpoint.aclose()


def lazy_mcp_routes(parts: Parts, *, version: str = "") -> list[BaseRoute]:
    """The ``/mcp`` route over ``parts`` (the running Guard's agent), its SDK loaded later."""
    from starlette.routing import Route

    return [Route(PATH, endpoint=LazyMCP(parts, version=version))]
