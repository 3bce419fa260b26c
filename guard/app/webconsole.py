"""The web console's wiring: the gate built from the settings, the store's tokens, the
trusted proxies (``access:``), handed to ``guard.web.console`` (which reads no settings of its own);
and MCP at ``/mcp`` (``guard.mcp.http``) over the running Guard's agent."""

from __future__ import annotations

from typing import TYPE_CHECKING

from guard.access.proxies import Proxies
from guard.notify.running_gate import gate_from_settings
from guard.ports.running import Runtime
from guard.web.console import Console, routes
from guard.web.console.signin import StoreTokens

if TYPE_CHECKING:
    from starlette.routing import BaseRoute


def console_routes(guard: Runtime) -> list[BaseRoute]:
    """The console's routes for ``guard``'s web server, and ``/mcp`` when it has an agent."""
    proxies = Proxies.of(guard.settings.access)
    console = Console(
        guard, gate_from_settings(guard.settings, guard.db), StoreTokens(guard.db), proxies=proxies
    )
    agent = getattr(guard, "agent", None)  # a Guard has one (built on first use)
    if agent is None:
        return routes(console)
    from guard import __version__
    from guard.mcp.lazy import lazy_mcp_routes  # the MCP SDK loads on /mcp's first request

    return [*routes(console), *lazy_mcp_routes(agent, version=__version__)]
