"""The MCP server: the SDK's low-level ``Server`` over ``GuardTools``, whatever the transport.

Tools are listed from the one table (``guard.agent.tools``) with their JSON schemas and the
role each needs; a call's failure is a result with ``isError`` and a plain message. Resources:
the templates ``guard://incidents/{id}`` and ``guard://skills/{name}``, and the newest
incidents and every skill listed as resources. ``actor_of`` says who asks, per request (the
stdio process's user, an HTTP request's token). What Guard read (results, resources, their
listed descriptions) comes fenced as untrusted data; the instructions say what that means.

Tested by ``tests/mcp/test_mcp_service.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from guard.agent.tools import SPECS, input_schema
from guard.incidents.gate import Actor
from guard.mcp import reads
from guard.mcp.service import GuardTools

ActorOf = Callable[[ServerRequestContext[Any, Any]], Actor]
RESOURCES = 50  # newest incidents listed as resources
# the tools that change what Guard does (a remedy, an incident's state, a silence)
CHANGING = ("approve", "deny", "propose_remedy", "resolve", "mute", "unmute", "silence", "silences")
INSTRUCTIONS = (
    "Guard watches services, opens incidents and heals them. Read incidents, logs, memory "
    "and skills; with the operator role run read-only commands in an incident's sandbox "
    "and propose a fix (a human approves it); with the approver role approve or deny. "
    "Every call is audited under your token's name."
)


def tool_list() -> list[types.Tool]:
    """Every tool, its JSON schema and, in its description, the role it needs."""
    return [
        types.Tool(
            name=s.name,
            description=f"{s.description} (role: {s.role.name})",
            input_schema=input_schema(s),
            annotations=types.ToolAnnotations(
                read_only_hint=s.name not in CHANGING,
                destructive_hint=s.name == "approve",
            ),
        )
        for s in SPECS
    ]


def build_server(tools: GuardTools, actor_of: ActorOf, *, version: str = "") -> Server[Any]:
    """The server; each handler asks ``actor_of`` who is calling."""

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_list())

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        done = await tools.call(actor_of(ctx), params.name, params.arguments)
        return types.CallToolResult(
            content=[types.TextContent(text=done.text)], is_error=done.error
        )

    async def list_templates(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    name="incident",
                    uri_template="guard://incidents/{id}",
                    description="An incident whole, as show_incident returns it (JSON, fenced "
                    "as untrusted data).",
                    mime_type="text/plain",
                ),
                types.ResourceTemplate(
                    name="skill",
                    uri_template="guard://skills/{name}",
                    description="A skill's description and steps, as show_skill returns it.",
                    mime_type="text/plain",
                ),
            ]
        )

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        actor = actor_of(ctx)
        refused = await tools.authorise(actor, _VIEW, None)
        if refused is not None:
            raise MCPError(types.INVALID_REQUEST, f"refused: {refused}")
        found = await asyncio.to_thread(reads.list_incidents, tools.db, None, RESOURCES)
        fenced = tools.fenced  # a title is a log line's words: data, as a read's result
        listed = [
            types.Resource(
                name=f"incident {i['id']}",
                uri=f"guard://incidents/{i['id']}",
                description=fenced(f"{i['state']} {i['severity']}: {i['title']}", "incident"),
                mime_type="text/plain",  # JSON inside the untrusted-data fence
            )
            for i in found
        ] + [
            types.Resource(
                name=f"skill {s.name}",
                uri=f"guard://skills/{s.name}",
                description=fenced(s.description, "skill"),
                mime_type="text/plain",
            )
            for s in tools.parts.library.skills
        ]
        return types.ListResourcesResult(resources=listed)

    async def read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        done = await tools.read(actor_of(ctx), uri)
        if done.error:
            raise MCPError(types.INVALID_PARAMS, done.text)
        return types.ReadResourceResult(  # text/plain: even an incident's JSON comes fenced
            contents=[types.TextResourceContents(uri=uri, text=done.text, mime_type="text/plain")]
        )

    return Server(
        "guard",
        version=version,
        instructions=f"{INSTRUCTIONS} {tools.fence.rule_under('your user')}",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


_VIEW = next(s for s in SPECS if s.name == "list_incidents")  # what listing needs: view
