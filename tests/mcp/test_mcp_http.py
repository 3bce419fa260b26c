"""``/mcp`` over real HTTP (uvicorn on a free local port, in this process): the bearer token is
required on every request, wrong tokens are limited per address, a revoked token stops at
once, a session answers only the token that opened it, and a page of another origin is
refused unless ``access.mcp_allowed_origins`` names it."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import uvicorn
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.routing import Route

from guard.access.roles import Role
from guard.access.tokens import create_token, revoke_token
from guard.config import Settings
from guard.mcp.http import mcp_routes
from guard.web.console.signin import Limiter
from tests.conftest import GuardHome
from tests.mcp.helpers import TEN, http_session, parts

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@contextlib.asynccontextmanager
async def serving(home: GuardHome, limiter: Limiter | None = None) -> AsyncIterator[str]:
    """``/mcp`` over ``home``'s store, served on a free port: its URL."""
    routes = mcp_routes(parts(home))
    if limiter is not None:
        routes[0].app.limiter = limiter  # type: ignore[attr-defined]
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(Starlette(routes=routes), lifespan="off", log_level="error")
    )
    task = asyncio.create_task(server.serve(sockets=[sock]))
    for _ in range(500):
        if server.started:
            break
        await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 30)
        await routes[0].app.aclose()  # type: ignore[attr-defined]
        sock.close()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **ACCEPT}


async def test_every_request_needs_a_live_token(home: GuardHome) -> None:
    p = parts(home)
    good = create_token(p.db, "ci", Role.viewer)
    async with serving(home) as url, httpx.AsyncClient(timeout=30) as c:
        for headers in ({}, bearer("gat_" + "x" * 43), bearer("not-a-token")):
            r = await c.post(url, json=INIT, headers={**ACCEPT, **headers})
            assert r.status_code == 401
            assert r.headers["www-authenticate"] == 'Bearer realm="guard"'
            assert "guard access token create" in r.json()["error"]
        r = await c.post(url, json=INIT, headers=bearer(good))
        assert r.status_code == 200 and r.headers["mcp-session-id"]

        async with http_session(url, good) as session:
            assert {t.name for t in (await session.list_tools()).tools} == TEN
            revoke_token(p.db, "ci")
            r = await c.post(url, json=INIT, headers=bearer(good))
            assert r.status_code == 401  # revoked: refused from the next request on


async def test_a_session_answers_only_its_own_token(home: GuardHome) -> None:
    p = parts(home)
    ann, bob = create_token(p.db, "ann", Role.viewer), create_token(p.db, "bob", Role.viewer)
    async with serving(home) as url, httpx.AsyncClient(timeout=30) as c:
        opened = await c.post(url, json=INIT, headers=bearer(ann))
        session = {"mcp-session-id": opened.headers["mcp-session-id"]}
        listing: dict[str, Any] = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        r = await c.post(url, json=listing, headers={**bearer(bob), **session})
        assert r.status_code == 404  # as if the session did not exist


async def test_wrong_tokens_are_limited_per_address(home: GuardHome) -> None:
    p = parts(home)
    good = create_token(p.db, "ci", Role.viewer)
    async with serving(home, Limiter(limit=3, window=600)) as url, httpx.AsyncClient() as c:
        for _ in range(3):
            assert (await c.post(url, json=INIT, headers=bearer("wrong"))).status_code == 401
        r = await c.post(url, json=INIT, headers=bearer(good))
        assert r.status_code == 429 and int(r.headers["retry-after"]) > 0


def test_guard_run_loads_the_sdk_only_on_the_first_request(home: GuardHome) -> None:
    """The web server mounts ``LazyMCP``: building the route imports no MCP SDK (a second of
    every ``guard run``'s start); its first request does, then serves as the real endpoint."""
    import subprocess
    import sys

    code = (
        "import sys; from guard.mcp.lazy import lazy_mcp_routes; lazy_mcp_routes(None); "
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

    async def first_requests() -> None:
        from guard.mcp.lazy import LazyMCP

        lazy = LazyMCP(parts(home))
        app = Starlette(routes=[Route("/mcp", endpoint=lazy)])
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            r = await c.post("/mcp", json=INIT, headers=ACCEPT)
            assert r.status_code == 401 and "Bearer" in r.json()["error"]
            assert lazy.endpoint is not None
            r = await c.post("/mcp", json=INIT, headers=bearer("gat_" + "x" * 43))
            assert r.status_code == 401
        await lazy.aclose()

    asyncio.run(first_requests())


AGENT = "https://agent.example.com"  # a web agent's origin, allowed by the config


async def test_a_page_of_another_origin_is_refused_naming_the_setting(home: GuardHome) -> None:
    home.write_config({"access": {"mcp_allowed_origins": [AGENT]}})
    p = parts(home)
    good = create_token(p.db, "ci", Role.viewer)
    async with serving(home) as url, httpx.AsyncClient(timeout=30) as c:
        own = url.removesuffix("/mcp")  # http://127.0.0.1:PORT, the Host the client sends
        port = own.rpartition(":")[2]
        for origin in (
            "https://evil.example",
            "null",  # a sandboxed frame or a local file
            f"http://localhost:{port}",  # not the Host asked for (a rebound name, say)
            "http://127.0.0.1:1",  # the same host, another port: another origin
            f"{AGENT}/path",
        ):
            for headers in (bearer(good), ACCEPT):  # refused before the token is looked at
                r = await c.post(url, json=INIT, headers={**headers, "Origin": origin})
                assert r.status_code == 403, origin
                assert "access.mcp_allowed_origins" in r.json()["error"]
                assert repr(origin) in r.json()["error"]
                assert "mcp-session-id" not in r.headers
        for allowed in ({}, {"Origin": own}, {"Origin": AGENT}, {"Origin": AGENT.upper() + ":443"}):
            r = await c.post(url, json=INIT, headers={**bearer(good), **allowed})
            assert r.status_code == 200 and r.headers["mcp-session-id"], allowed

        async with http_session(url, good, Origin=AGENT) as session:
            assert {t.name for t in (await session.list_tools()).tools} == TEN


@pytest.mark.unit
def test_an_allowed_origin_must_be_an_origin() -> None:
    assert Settings().access.mcp_allowed_origins == []
    fine = [AGENT, "http://10.0.0.5:8080", "https://guard.example.com/"]
    assert Settings(access={"mcp_allowed_origins": fine}).access.mcp_allowed_origins == fine
    for bad in ("agent.example.com", "https://agent.example.com/mcp", "null", "*", "ftp://a"):
        with pytest.raises(ValidationError) as err:
            Settings(access={"mcp_allowed_origins": [AGENT, bad]})
        said = str(err.value)
        assert "access.mcp_allowed_origins" in said
        assert f"[1] {bad!r} is not a web origin: scheme://host[:port]" in said
