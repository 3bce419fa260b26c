"""``/mcp`` of a real ``guard run`` (no Docker: an HTTP check, fixes by ``http.request``), with
the SDK's own client: an approval runs a proposal only by the digest the approver read, and
one token cannot take every session, its sessions closing once it is revoked."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from guard.util.commandtext import digest, short
from tests.conftest import GuardHome
from tests.fakes.local_http import stop
from tests.helpers.agent import db_rows, find, running_guard, show, wait_for
from tests.helpers.telegram import Service, http_playbook
from tests.mcp.helpers import Transcript, http_session
from tests.mcp.test_mcp_http import INIT, bearer
from tests.webui.helpers import LOCAL, cli_token, console_url

CAP = 3  # access.mcp_sessions_per_token, lowered


@pytest.fixture
def svc() -> Iterator[Service]:
    service = Service()
    yield service
    stop(service.server)


def configure(home: GuardHome, svc: Service, **extra: Any) -> None:
    """A Guard on loopback watching ``svc``'s health; no skill: it asks a human."""
    http_playbook(home, svc)
    home.write_config(
        {
            **LOCAL,
            "sandbox": {"backend": "local"},
            "agent": {"verify_timeout": "5s", "poll_interval": "200ms"},
            "skills": {"git_author": "Guard Test <guard@test>"},
            **extra,
        }
    )


def test_an_approval_runs_only_the_proposal_whose_digest_it_names(
    home: GuardHome, svc: Service
) -> None:
    configure(home, svc)
    seen, replaced = f"http.request {svc.base}/fix?seen", f"http.request {svc.base}/fix"
    said = Transcript()
    with running_guard(home) as (_, log):
        operator = cli_token(home, "ops-bot", "operator")
        approver = cli_token(home, "approver-bot", "approver")
        inc = wait_for(lambda: find(home, monitor_id="web", state="awaiting_human"), 60, "ask")
        address = console_url(log) + "/mcp"

        async def steps() -> None:
            async with (
                http_session(address, operator) as ops,
                http_session(address, approver) as app,
            ):
                await said.ok(ops, "propose_remedy", incident_id=inc["id"], fix=seen, reason="r")
                shown = await said.json(app, "show_incident", id=inc["id"])
                assert shown["proposal"]["fix"] == seen
                read = shown["proposal"]["digest"]
                assert read == digest(seen)
                # the operator replaces the proposal after the approver read it
                await said.ok(
                    ops, "propose_remedy", incident_id=inc["id"], fix=replaced, reason="r"
                )
                now = short(digest(replaced))

                text, error = await said.call(
                    app, "approve", incident_id=inc["id"], digest=read[:12]
                )
                assert error and text.startswith("nothing ran: "), text
                assert f"you sent {read[:12]}, it is now {now}" in text
                text, error = await said.call(app, "approve", incident_id=inc["id"])
                assert error and f"digest={now}" in text, text  # names the digest to send
                text, error = await said.call(app, "approve", incident_id=inc["id"], digest="ab")
                assert error and "argument 'digest'" in text, text
                assert svc.fixes == 0 and not svc.healthy
                assert db_rows(home, "select id from remediation_run") == []

                done = await said.ok(app, "approve", incident_id=inc["id"], digest=now)
                assert "saved as skill" in done, done

        asyncio.run(steps())
        assert svc.fixes == 1
        assert show(home, inc["id"])["state"] == "resolved"
    (bound,) = db_rows(home, "select fix from human_command where verb = 'approve'")
    assert bound == (digest(replaced),)  # the queued approval carries the whole digest


def sessions_open(base: str) -> float:
    """``guard_mcp_sessions`` on the running Guard's /metrics."""
    text = httpx.get(f"{base}/metrics", timeout=10).text
    found = re.search(r"^guard_mcp_sessions (\S+)$", text, re.MULTILINE)
    assert found is not None, "guard_mcp_sessions not in /metrics"
    return float(found.group(1))


def test_one_token_cannot_take_every_session_and_a_revoked_ones_close(
    home: GuardHome, svc: Service
) -> None:
    configure(home, svc, access={"mcp_sessions_per_token": CAP})
    with running_guard(home) as (_, log):
        ann, bob = cli_token(home, "ann", "viewer"), cli_token(home, "bob", "viewer")
        base = console_url(log)
        address = base + "/mcp"

        async def steps() -> None:
            async with contextlib.AsyncExitStack() as stack, httpx.AsyncClient(timeout=30) as c:
                opened = [
                    await stack.enter_async_context(http_session(address, ann)) for _ in range(CAP)
                ]
                r = await c.post(address, json=INIT, headers=bearer(ann))
                assert r.status_code == 429 and "mcp-session-id" not in r.headers
                said = r.json()["error"]
                assert f"token ann has {CAP} open MCP sessions" in said, said
                assert "access.mcp_sessions_per_token" in said
                async with http_session(address, bob) as other:  # another token still gets in
                    await other.list_tools()
                    assert sessions_open(base) == CAP + 1
                    home.cli("access", "revoke", "ann")
                    wait_for(lambda: sessions_open(base) == 1, 30, "ann's sessions to close")
                    await other.list_tools()
                r = await c.post(address, json=INIT, headers=bearer(ann))
                assert r.status_code == 401
                assert len(opened) == CAP

        asyncio.run(steps())
        assert "closed 3 MCP sessions of token ann: it was revoked" in log.read_text()
