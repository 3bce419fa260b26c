"""The MCP servers a team already runs (``llm.mcp_servers``), as tools of the model's
investigation: Guard is their MCP client.

Deny by default: a server's tool joins the investigation's table only when its server's
``allow`` names it, prefixed with the server's name (``prometheus__execute_query``). A tool in
``write`` is never offered nor callable: the model may only name it in a proposal
(``mcp.call SERVER TOOL {json}``), which a human approves like any other fix. What a server
says is untrusted data, like a log line: its tools' descriptions reach the model fenced, their
argument schemas without descriptions, and each result is cut to ``max_result_bytes``, then
redacted and fenced by the investigation like every tool's. A stdio server runs as a
subprocess with only its own environment (``env`` and the ``secrets`` it names); an HTTP
server gets only the ``headers`` configured. Each call is audited: server, tool, redacted
arguments, the answer's size.

Tested by ``tests/llm/test_mcp_servers.py``.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from loguru import logger

from guard.config.mcp_servers import McpServerSettings
from guard.redact import Redactor

SEPARATOR = "__"
Audit = Callable[[str, dict[str, Any]], None]
"""``(subject, data)``: one audit entry for one call (``action: mcp.call``)."""


class ServerError(Exception):
    """A server could not be reached or answered with an error."""


@dataclass(frozen=True)
class ServerTool:
    """One tool a server lists, and what Guard's configuration lets the model do with it."""

    server: str
    name: str
    description: str
    schema: dict[str, Any]
    allowed: bool
    write: bool

    @property
    def qualified(self) -> str:
        return f"{self.server}{SEPARATOR}{self.name}"

    @property
    def standing(self) -> str:
        """allowed, write (a proposal only) or hidden."""
        return "allowed" if self.allowed else "write" if self.write else "hidden"


def bare_schema(schema: Any) -> dict[str, Any]:
    """A tool's argument schema without any description or title: text a server wrote must
    not reach the model unfenced, and types, properties and required are what it needs."""
    if not isinstance(schema, dict):
        return {"type": "object", "properties": {}}

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: strip(v)
                for k, v in node.items()
                if k not in ("description", "title", "examples", "$comment")
            }
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    bare: dict[str, Any] = strip(schema)
    bare.setdefault("type", "object")
    return bare


def text_of(result: Any, limit: int) -> tuple[str, int]:
    """A call result's text content cut to ``limit`` bytes (saying so), and its whole size."""
    parts: list[str] = []
    for item in getattr(result, "content", None) or []:
        text = getattr(item, "text", None)
        parts.append(text if isinstance(text, str) else f"[{getattr(item, 'type', 'content')}]")
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        parts.append(json.dumps(structured, default=str))
    whole = "\n".join(parts).encode()
    if len(whole) <= limit:
        return whole.decode(), len(whole)
    kept = whole[:limit].decode(errors="ignore")
    return f"{kept}\n[cut: the server sent {len(whole)} bytes; {limit} kept]", len(whole)


class OpenServers:
    """The servers opened for one investigation: their allowed tools, and how to call them."""

    def __init__(self, settings: Mapping[str, McpServerSettings], audit: Audit | None) -> None:
        self.settings = settings
        self.audit = audit
        self.sessions: dict[str, Any] = {}
        self.tools: dict[str, ServerTool] = {}  # every listed tool, by qualified name
        self.unreachable: dict[str, str] = {}

    @property
    def allowed(self) -> list[ServerTool]:
        return [t for t in self.tools.values() if t.allowed]

    @property
    def writes(self) -> list[ServerTool]:
        return [t for t in self.tools.values() if t.write]

    def specs(self, wrap: Callable[[str, str], str]) -> list[dict[str, Any]]:
        """The allowed tools in OpenAI's function form; ``wrap(text, source)`` fences each
        description (a description that tries to instruct is just text)."""
        return [
            {
                "type": "function",
                "function": {
                    "name": t.qualified,
                    "description": f"Tool {t.name!r} of the MCP server {t.server!r}. Its own "
                    "description, untrusted: " + wrap(t.description[:1000], t.qualified),
                    "parameters": t.schema,
                },
            }
            for t in self.allowed
        ]

    def owns(self, name: str) -> bool:
        return SEPARATOR in name and name.split(SEPARATOR, 1)[0] in self.settings

    async def call(
        self, name: str, args: dict[str, Any], redactor: Redactor, approved: bool = False
    ) -> str:
        """Call an allowed tool (``approved``: a write tool too, which only a human's approval
        runs: ``mcp.call``); a hidden or unknown tool is refused. Each attempt is audited, a
        refused one too."""
        tool = self.tools.get(name)
        server, _, bare = name.partition(SEPARATOR)
        record: dict[str, Any] = {"arguments": redactor.redact(json.dumps(args))[:2000]}
        if approved:
            record["approved"] = True
        try:
            if tool is None or not (tool.allowed or (approved and tool.write)):
                record["refused"] = True
                why = (
                    "it changes something: only a human can run it, name it in propose_remedy "
                    f"as `mcp.call {server} {bare} {{json}}`"
                    if tool is not None and tool.write
                    else "it is not in the server's allow list"
                )
                raise ServerError(f"refused: {name} is not yours to call ({why})")
            return await self._call(tool, args, record)
        finally:
            if self.audit is not None:  # a database write: off the event loop
                await asyncio.to_thread(self.audit, f"{server}/{bare}", record)

    async def _call(self, tool: ServerTool, args: dict[str, Any], record: dict[str, Any]) -> str:
        settings = self.settings[tool.server]
        record.update(bytes=0, error=True)
        try:
            async with asyncio.timeout(settings.timeout):
                result = await self.sessions[tool.server].call_tool(tool.name, args)
        except TimeoutError:
            raise ServerError(
                f"{tool.qualified} gave no answer within {settings.timeout:g} s "
                f"(llm.mcp_servers.{tool.server}.timeout)"
            ) from None
        text, record["bytes"] = text_of(result, settings.max_result_bytes)
        record["error"] = bool(getattr(result, "is_error", False))
        return f"error from {tool.server}: {text}" if record["error"] else text


class ToolServers:
    """Opens the configured servers for an investigation, or to check them."""

    def __init__(
        self,
        servers: Mapping[str, McpServerSettings],
        redactor: Redactor,
        audit: Audit | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.servers = dict(servers)
        self.redactor = redactor
        self.audit = audit
        self.environ = environ

    @asynccontextmanager
    async def open(self) -> AsyncIterator[OpenServers]:
        """Every server connected and listed (one that fails is in ``unreachable``, with why).

        Each server lives in a task of its own, holding its transport open until the
        investigation ends: the SDK's transports run task groups, and a server that fails
        cancels its own task, never the investigation or another server."""
        opened = OpenServers(self.servers, self.audit)
        stop = asyncio.Event()
        held: list[asyncio.Task[None]] = []
        try:
            for name, settings in self.servers.items():
                ready: asyncio.Future[tuple[Any, Any]] = asyncio.get_running_loop().create_future()
                held.append(asyncio.create_task(self._hold(settings, ready, stop)))
                try:
                    session, listed = await asyncio.wait_for(ready, settings.connect_timeout)
                except Exception as exc:  # a server's failure is data for the investigation
                    why = self.redactor.redact(_why(exc, settings))[:500]
                    opened.unreachable[name] = why
                    logger.warning("MCP server {}: {}", name, why)
                    continue
                opened.sessions[name] = session
                for tool in listed.tools:
                    t = ServerTool(
                        name,
                        tool.name,
                        tool.description or "",
                        bare_schema(tool.input_schema),
                        allowed=tool.name in settings.allow,
                        write=tool.name in settings.write,
                    )
                    opened.tools[t.qualified] = t
            yield opened
        finally:
            stop.set()
            for task in held:
                try:
                    await asyncio.wait_for(task, 10)
                except (Exception, asyncio.CancelledError) as exc:
                    logger.debug("closing an MCP server: {!r}", exc)

    async def _hold(
        self, s: McpServerSettings, ready: asyncio.Future[tuple[Any, Any]], stop: asyncio.Event
    ) -> None:
        """Connect, list, hand the session over, and keep it open until ``stop``."""
        try:
            async with AsyncExitStack() as stack:
                session = await self._connect(stack, s)
                listed = await session.list_tools()
                ready.set_result((session, listed))
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(
                    exc
                    if isinstance(exc, Exception)
                    else ConnectionError("the server's connection was cancelled")
                )

    async def _connect(self, stack: AsyncExitStack, s: McpServerSettings) -> Any:
        from mcp import ClientSession

        values = s.resolved(self.environ)
        if s.command is not None:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            errlog = stack.enter_context(tempfile.TemporaryFile(mode="w+"))  # noqa: SIM115 (the stack closes it)
            params = StdioServerParameters(
                command=s.command,
                args=list(s.args),
                env={**s.env, **{n: values[n] for n in s.secrets}},
            )
            read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
        else:
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            headers = {h: values[n] for h, n in s.headers.items()}
            client = await stack.enter_async_context(create_mcp_http_client(headers=headers))
            assert s.url is not None
            read, write = await stack.enter_async_context(
                streamable_http_client(s.url, http_client=client)
            )
        session = await stack.enter_async_context(
            ClientSession(read, write, read_timeout_seconds=max(s.timeout, s.connect_timeout))
        )
        await session.initialize()
        return session


def _why(exc: BaseException, settings: McpServerSettings) -> str:
    """A failure to connect, said for a person."""
    if isinstance(exc, TimeoutError):
        return f"no answer within {settings.connect_timeout:g} s (connect_timeout)"
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {settings.command}"
    if isinstance(exc, BaseExceptionGroup):
        inner = exc.exceptions[0]
        return _why(inner, settings)
    said = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return f"cannot reach {settings.url}: {said}" if settings.url else said


@dataclass
class ServerReport:
    """``guard mcp-servers check``: one server's tools and standing, or why it is unreachable."""

    name: str
    transport: str
    tools: list[ServerTool] = field(default_factory=list)
    error: str = ""
    unknown: list[str] = field(default_factory=list)  # listed in allow/write, not on the server


async def check(servers: ToolServers) -> list[ServerReport]:
    """What each configured server offers and what Guard lets the model use."""
    reports: list[ServerReport] = []
    async with servers.open() as opened:
        for name, s in servers.servers.items():
            report = ServerReport(name, "stdio" if s.command else "http")
            report.error = opened.unreachable.get(name, "")
            report.tools = [t for t in opened.tools.values() if t.server == name]
            if not report.error:
                names = {t.name for t in report.tools}
                report.unknown = sorted(set(s.allow + s.write) - names)
            reports.append(report)
    return reports
