"""``mcp.call SERVER TOOL '{json}'``: run a tool of a team's MCP server (``llm.mcp_servers``)
that a human approved. The model may only name a ``write`` tool in a proposal; this action is
how the approved proposal runs, under the same gate, digest binding and audit as any fix. A
tool must be in its server's ``write`` or ``allow`` list; anything else is refused.

Tested by ``tests/llm/test_mcp_servers.py``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from guard.actions.base import ActionContext, ActionError, ActionResult
from guard.llm.mcp_servers import SEPARATOR, ServerError, ToolServers
from guard.redact import Redactor


class Call:
    name = "mcp.call"
    description = "call a tool of an MCP server in llm.mcp_servers (write tools need approval)"
    params = ("server", "tool", "arguments")

    async def run(self, args: Mapping[str, Any], ctx: ActionContext) -> ActionResult:
        configured = ctx.settings.llm.mcp_servers
        server, tool = str(args.get("server", "")), str(args.get("tool", ""))
        settings = configured.get(server)
        if settings is None:
            known = ", ".join(sorted(configured)) or "none"
            raise ActionError(f"mcp.call: no MCP server {server!r} in llm.mcp_servers ({known})")
        if tool not in settings.write and tool not in settings.allow:
            raise ActionError(
                f"mcp.call: {tool!r} is in neither write nor allow of llm.mcp_servers.{server}"
            )
        arguments = _arguments(args.get("arguments"))
        redactor = Redactor()
        async with ToolServers({server: settings}, redactor).open() as opened:
            if server in opened.unreachable:
                raise ActionError(f"mcp.call: {server} unreachable: {opened.unreachable[server]}")
            try:
                text = await opened.call(
                    f"{server}{SEPARATOR}{tool}", arguments, redactor, approved=True
                )
            except ServerError as exc:
                raise ActionError(f"mcp.call: {exc}") from None
        ok = not text.startswith(f"error from {server}:")
        return ActionResult(ok, f"{server} {tool}: {redactor.redact(text)[:2000]}")


def _arguments(raw: Any) -> dict[str, Any]:
    """The tool's arguments: a JSON object (``'{}'`` when none are given)."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(str(raw))
    except ValueError as exc:
        raise ActionError(f"mcp.call: the arguments are not JSON ({exc}): quote them") from None
    if not isinstance(value, dict):
        raise ActionError("mcp.call: the arguments must be one JSON object")
    return value


ACTIONS = [Call()]
