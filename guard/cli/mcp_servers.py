"""``guard mcp-servers check``: what each MCP server in ``llm.mcp_servers`` offers, which of its
tools the model may call (allowed), which it may only name in a proposal (write), which stay
hidden, and why a server cannot be reached. Checking lists tools; it calls none.

Tested by ``tests/llm/test_mcp_servers.py``.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict

import typer

from guard.cli.common import ConfigOption, echo, fail, settings_from

app = typer.Typer(
    help="The MCP servers the model's investigation may use (llm.mcp_servers).",
    no_args_is_help=True,
)


@app.command("check")
def check_servers(
    as_json: bool = typer.Option(False, "--json", help="One JSON object per server."),
    config: str | None = ConfigOption,
) -> None:
    """List each server's tools and their standing; exit 1 if a server is unreachable or a
    listed tool does not exist."""
    from guard.llm.mcp_servers import ToolServers, check
    from guard.redact import Redactor

    settings = settings_from(config, logging=False)
    servers = settings.llm.mcp_servers
    if not servers:
        fail("no MCP servers configured: add them under llm.mcp_servers (docs/DIAGNOSIS.md)", 2)
    redactor = Redactor()  # over the process-wide policy settings_from configured
    reports = asyncio.run(check(ToolServers(servers, redactor)))
    for report in reports:
        if as_json:
            row = asdict(report)
            row["tools"] = [
                {"name": t.name, "standing": t.standing, "qualified": t.qualified}
                for t in report.tools
            ]
            echo(json.dumps(row))
            continue
        echo(f"{report.name} ({report.transport})")
        if report.error:
            echo(f"  unreachable: {report.error}")
        for tool in sorted(report.tools, key=lambda t: (t.standing, t.name)):
            echo(f"  {tool.standing:<8} {tool.name}")
        for name in report.unknown:
            echo(f"  missing  {name} (named in allow or write; the server has no such tool)")
    if any(r.error or r.unknown for r in reports):
        raise typer.Exit(1)
