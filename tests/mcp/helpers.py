"""MCP clients for the tests: the SDK's own, over stdio (``guard mcp``) and streamable HTTP."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import yaml
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from guard.agent.tools import Toolbox
from guard.config import Settings
from guard.redact import Redactor
from guard.skills.library import SkillLibrary
from guard.store.db import Database
from guard.store.models import Incident
from tests.conftest import GuardHome

TEN = {
    "list_incidents",
    "show_incident",
    "recent_logs",
    "search_memory",
    "list_skills",
    "show_skill",
    "sandbox_run",
    "probe",
    "propose_remedy",
    "approve",
    "deny",
    "resolve",  # and the three that end an incident (docs/ENDING.md)
    "mute",
    "unmute",
    "silence",  # and silences (docs/ENDING.md)
    "silences",
}


FENCED = re.compile(
    r"<untrusted-data id=(?P<id>[0-9a-f]{12}) source=(?P<source>\S+)>\n(?P<data>.*)\n"
    r"</untrusted-data id=(?P=id)>",
    re.DOTALL,
)


def unfenced(text: str, source: str | None = None) -> str:
    """The data inside a fenced result (from ``source``, if given); fails if it is not fenced."""
    m = FENCED.fullmatch(text)
    assert m is not None, f"not fenced: {text[:200]!r}"
    assert source is None or m["source"] == source, m["source"]
    assert "untrusted-data" not in m["data"]  # a marker inside is defused
    return m["data"]


def url(home: GuardHome) -> str:
    """The running Guard's ``/mcp``."""
    port = yaml.safe_load(home.config.read_text())["http_port"]
    return f"http://127.0.0.1:{port}/mcp"


def create_token(home: GuardHome, name: str, role: str) -> str:
    """``guard access token create NAME --role ROLE``'s secret (its last line)."""
    return (
        home.cli("access", "token", "create", name, "--role", role).stdout.strip().splitlines()[-1]
    )


@asynccontextmanager
async def http_session(address: str, token: str, **headers: str) -> AsyncIterator[ClientSession]:
    """An initialised session with the ``/mcp`` at ``address``, signed with ``token``."""
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}", **headers})
    async with (
        client,
        streamable_http_client(address, http_client=client) as (read, write),
        ClientSession(read, write, read_timeout_seconds=300) as session,
    ):
        await session.initialize()
        yield session


def over_http(home: GuardHome, token: str) -> AbstractAsyncContextManager[ClientSession]:
    """An initialised session with the running Guard's ``/mcp``, signed with ``token``."""
    return http_session(url(home), token)


@asynccontextmanager
async def over_stdio(home: GuardHome, *args: str) -> AsyncIterator[ClientSession]:
    """An initialised session with ``guard mcp ARGS`` started as a subprocess."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "guard.cli", "mcp", *args],
        env={
            "GUARD_CONFIG": str(home.config),
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        },
        cwd=home.root,
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, read_timeout_seconds=300) as session,
    ):
        await session.initialize()
        yield session


class Transcript:
    """Every text an MCP client was given, to check for secrets afterwards."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    async def call(self, session: ClientSession, tool: str, **args: Any) -> tuple[str, bool]:
        """The tool's text and whether it is an error."""
        result = await session.call_tool(tool, args)
        text = "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))
        self.texts.append(text)
        return text, bool(result.is_error)

    async def ok(self, session: ClientSession, tool: str, **args: Any) -> str:
        text, error = await self.call(session, tool, **args)
        assert not error, f"{tool} {args}: {text}"
        return text

    async def json(self, session: ClientSession, tool: str, **args: Any) -> Any:
        """A data tool's JSON, from inside its fence."""
        return json.loads(unfenced(await self.ok(session, tool, **args), tool))

    async def read(self, session: ClientSession, uri: str) -> str:
        result = await session.read_resource(uri)
        text = "\n".join(
            c.text for c in result.contents if isinstance(c, types.TextResourceContents)
        )
        self.texts.append(text)
        return text

    async def listing(self, session: ClientSession) -> dict[str, dict[str, Any]]:
        """The tools listed, by name: their JSON schemas (and descriptions, kept)."""
        tools = (await session.list_tools()).tools
        self.texts.extend(t.description or "" for t in tools)
        return {t.name: t.input_schema for t in tools}


class Memory:
    """Semantic memory that fails, as an unreachable helper process would."""

    def search(self, text: str, limit: int = 5) -> list[Any]:
        raise RuntimeError("the memory process is gone")


@dataclass
class Parts:
    settings: Settings
    db: Database
    library: SkillLibrary
    redactor: Redactor = field(default_factory=Redactor)
    memory: Any = field(default_factory=Memory)

    def toolbox(self, inc: Incident) -> Toolbox:
        raise RuntimeError("no sandbox in this test")


def parts(home: GuardHome) -> Parts:
    return Parts(home.settings(), home.database(), SkillLibrary(home.root / "skills"))
