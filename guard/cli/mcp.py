"""``guard mcp``: Guard's tools for a local agent over MCP on stdin/stdout (docs/MCP.md).

The agent (Claude Code, any MCP client) starts this command; it serves until stdin closes.
Calls are made as ``mcp:stdio:<unix user>`` with ``--role`` (default ``operator``: read, run
commands in an incident's sandbox, propose a fix; ``approver`` also approves and denies).
Answers are queued for the running ``guard run``. Logs go to stderr; stdout is the protocol.
"""

from __future__ import annotations

import asyncio

import typer

from guard.access.roles import ROLE_NAMES, Role
from guard.cli.common import ConfigOption, database, fail, settings_from, standalone_agent
from guard.config import Settings
from guard.store.db import Database


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)


def mcp(
    role: str = typer.Option(
        "operator",
        "--role",
        help=f"The role the agent gets: one of {', '.join(ROLE_NAMES)}.",
    ),
    config: str | None = ConfigOption,
) -> None:
    """Serve Guard's tools to a local agent over MCP on stdin/stdout."""
    try:
        parsed = Role.parse(role)
    except ValueError as exc:
        fail(f"--role: {exc}", code=2)
    settings = settings_from(config)
    db = database(settings)
    asyncio.run(_serve(settings, db, parsed))


async def _serve(settings: Settings, db: Database, role: Role) -> None:
    from guard import __version__
    from guard.mcp.stdio import serve_stdio

    async with standalone_agent(settings, db) as agent:
        await serve_stdio(agent, role, version=__version__)
