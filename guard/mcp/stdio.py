"""``guard mcp``: the tools on stdin/stdout for a local agent, as ``mcp:stdio:<unix user>``.

The process runs beside ``guard run`` (or without it) on the same data directory: it reads
the store, runs sandbox commands itself, and queues answers that the running Guard's agent
carries out. Its role is ``--role`` (default ``operator``): whoever starts it has the volume,
and so the CLI's ``admin``, so the role is a guard rail for the agent it serves, not a
boundary against that user.
"""

from __future__ import annotations

import getpass

from mcp.server.stdio import stdio_server

from guard.access.policy import RolePolicy
from guard.access.roles import Role
from guard.incidents.gate import Actor, Gate
from guard.mcp.server import build_server
from guard.mcp.service import GuardTools, Parts

CHANNEL = "mcp"


def stdio_actor() -> Actor:
    """``mcp:stdio:<unix user>``."""
    try:
        user = getpass.getuser()
    except Exception:
        user = "unknown"
    return Actor(CHANNEL, f"stdio:{user}")


def stdio_gate(actor: Actor, role: Role, parts: Parts) -> Gate:
    """The gate for the stdio actor (its ``role``) and for nobody else."""
    return Gate([RolePolicy({CHANNEL: {actor.id: role}}, trusted={}, tokens=parts.db)])


async def serve_stdio(parts: Parts, role: Role, *, version: str = "") -> None:
    """Serve MCP on stdin/stdout until the client closes them."""
    actor = stdio_actor()
    tools = GuardTools(parts, stdio_gate(actor, role, parts), reload_skills=True)
    server = build_server(tools, lambda ctx: actor, version=version)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
