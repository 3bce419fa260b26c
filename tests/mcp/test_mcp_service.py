"""The MCP server in process, through the SDK's own in-process client: one tool table for both
faces, roles and their refusals (audited), errors as ``isError`` results without a traceback,
answers queued through the gate, every call audited and every result redacted."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from sqlmodel import col, select

from guard.access.roles import Role, needed
from guard.access.tokens import create_token, revoke_token
from guard.agent.tools import SPECS, TOOL_NAMES, TOOLS, input_schema
from guard.incidents.gate import Actor
from guard.incidents.lifecycle import record
from guard.mcp.http import token_gate
from guard.mcp.reads import READ_CHARS
from guard.mcp.server import build_server
from guard.mcp.service import GuardTools
from guard.mcp.stdio import stdio_actor, stdio_gate
from guard.store.db import Database
from guard.store.models import AuditEntry, HumanCommand, Incident
from tests.conftest import GuardHome
from tests.helpers.agent import stored_incident
from tests.mcp.helpers import TEN, parts, unfenced

pytestmark = pytest.mark.unit

SECRET = "gh" + "p_" + "Yb7Nc2Vx9Lk4Jh6Gf8Ds1Ap3Qw5Er7Ty9Ui0"


def client(tools: GuardTools, actor: Actor) -> Client:
    return Client(build_server(tools, lambda ctx: actor))


async def call(c: Client, tool: str, **args: Any) -> tuple[str, bool]:
    result = await c.call_tool(tool, args)
    return "\n".join(getattr(x, "text", "") for x in result.content), bool(result.is_error)


def audit(db: Database, action: str) -> list[AuditEntry]:
    with db.session() as session:
        return list(
            session.exec(
                select(AuditEntry).where(AuditEntry.action == action).order_by(col(AuditEntry.seq))
            )
        )


def test_one_table_two_faces() -> None:
    assert TOOL_NAMES == [
        "sandbox_run",
        "probe",
        "recent_logs",
        "search_memory",
        "list_skills",
        "show_skill",
        "propose_remedy",
    ]
    assert {s.name for s in SPECS} == TEN
    for spec in SPECS:
        assert needed(spec.verb) == spec.role, spec.name
        schema = input_schema(spec)
        bound = {"incident_id"} if spec.incident else set()
        assert set(schema["properties"]) == set(spec.properties) | bound
        assert ("incident_id" in schema["required"]) == spec.incident
    by_name = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
    logs = next(s for s in SPECS if s.name == "recent_logs")
    assert by_name["recent_logs"]["required"] == ["lines"]  # the model must say how many
    assert input_schema(logs)["required"] == ["incident_id"]  # an MCP client may not
    assert by_name["sandbox_run"] == {
        "type": "object",
        "properties": {"command": {"type": "string", "description": "a shell command line"}},
        "required": ["command"],
    }
    roles = {s.name: s.role for s in SPECS}
    assert roles["sandbox_run"] == roles["probe"] == roles["propose_remedy"] == Role.operator
    assert roles["approve"] == roles["deny"] == Role.approver
    assert roles["resolve"] == roles["mute"] == roles["unmute"] == Role.operator
    assert roles["silence"] == roles["silences"] == Role.operator
    assert {n for n, r in roles.items() if r == Role.viewer} == TEN - {
        "silence",
        "silences",
        "resolve",
        "mute",
        "unmute",
        "sandbox_run",
        "probe",
        "propose_remedy",
        "approve",
        "deny",
    }


async def test_errors_are_results_that_say_what_went_wrong(home: GuardHome) -> None:
    p = parts(home)
    actor = stdio_actor()
    tools = GuardTools(p, stdio_gate(actor, Role.operator, p))
    async with client(tools, actor) as c:
        text, error = await call(c, "nope")  # Guard's own words: not fenced
        assert error and text.startswith("unknown tool 'nope'; the tools are list_incidents, ")
        cases = {  # a data tool's errors may quote what it read: fenced, as its results
            ("show_incident", (("id", 999),)): "no incident 999; see list_incidents",
            ("show_incident", (("id", "x"),)): "argument 'id' must be an integer",
            ("list_incidents", (("state", "broken"),)): "state 'broken': one of open,",
            ("search_memory", (("query", "disk"),)): "memory is unavailable: the memory process",
            ("show_skill", (("name", "ghost"),)): "no skill named 'ghost'; see list_skills",
        }
        for (tool, args), said in cases.items():
            text, error = await call(c, tool, **dict(args))
            assert error and unfenced(text, tool).startswith(said), (tool, text)
            assert "Traceback" not in text
        inc = stored_incident_id(p.db)
        text, error = await call(c, "sandbox_run", incident_id=inc, command="id")
        assert error
        assert unfenced(text) == "sandbox_run failed: RuntimeError: no sandbox in this test"
        text, error = await call(c, "propose_remedy", incident_id=inc, fix="echo", reason="r")
        assert error and "is open: a fix is proposed only while Guard asks a human" in text
        with pytest.raises(MCPError, match="unknown resource 'guard://nothing'"):
            await c.read_resource("guard://nothing")
    assert [e.data["tool"] for e in audit(p.db, "mcp.unknown")] == ["nope"]
    calls = audit(p.db, "mcp.show_incident")
    assert [e.actor for e in calls] == [actor.name, actor.name]
    assert calls[0].data["ok"] is False and calls[0].data["args"] == {"id": 999}


def stored_incident_id(db: Database, **fields: Any) -> int:
    with db.session() as session:
        return int(stored_incident(session, **fields).id)


async def test_roles_refuse_naming_the_missing_role_and_a_revoked_token_at_once(
    home: GuardHome,
) -> None:
    p = parts(home)
    create_token(p.db, "viv", Role.viewer)
    create_token(p.db, "ops", Role.operator)
    tools = GuardTools(p, token_gate(p))
    inc = stored_incident_id(p.db, state="awaiting_human")
    async with client(tools, Actor("token", "viv")) as c:
        for tool, args, role in (
            ("sandbox_run", {"command": "id"}, "operator"),
            ("propose_remedy", {"fix": "echo", "reason": "r"}, "operator"),
            ("approve", {}, "approver"),
            ("deny", {}, "approver"),
        ):
            text, error = await call(c, tool, incident_id=inc, **args)
            assert error and text == f"refused: needs {role}; you are viewer"
        assert json.loads(unfenced((await call(c, "list_incidents"))[0]))[0]["id"] == inc
    async with client(tools, Actor("token", "ops")) as c:
        assert not (await call(c, "list_skills"))[1]
        revoke_token(p.db, "ops")
        text, error = await call(c, "list_skills")
        assert error and text == "refused: no live token named ops (unknown or revoked)"
    refused = audit(p.db, "mcp.refused")
    assert [(e.actor, e.data["tool"], e.data["reason"]) for e in refused] == [
        ("token:viv", "sandbox_run", "needs operator; you are viewer"),
        ("token:viv", "propose_remedy", "needs operator; you are viewer"),
        ("token:viv", "approve", "needs approver; you are viewer"),
        ("token:viv", "deny", "needs approver; you are viewer"),
        ("token:ops", "list_skills", "no live token named ops (unknown or revoked)"),
    ]
    with p.db.session() as session:
        assert session.exec(select(HumanCommand)).all() == []  # nothing was queued


async def test_answers_are_queued_through_the_gate_for_the_running_guard(
    home: GuardHome,
) -> None:
    p = parts(home)
    create_token(p.db, "ann", Role.approver)
    tools = GuardTools(p, token_gate(p))
    fix = "docker.start api"
    proposal = {"fix": fix, "reason": "r", "confidence": 0.5, "model": "m"}
    inc = stored_incident_id(
        p.db, state="awaiting_human", details={"options": ["proposal"], "proposal": proposal}
    )
    async with client(tools, Actor("token", "ann")) as c:
        shown = json.loads(unfenced((await call(c, "show_incident", id=inc))[0]))
        assert shown["proposal"]["fix"] == fix and len(shown["proposal"]["digest"]) == 64
        text, error = await call(
            c, "approve", incident_id=inc, digest=shown["proposal"]["digest"][:12].upper()
        )
        assert not error and text.startswith("queued as answer #1; no `guard run` is running")
        text, error = await call(c, "approve", incident_id=inc, option="web-fix")
        assert not error and text.startswith("queued as answer #2")  # a skill: no digest
        text, error = await call(c, "approve", incident_id=inc, option="web-fix", digest="a" * 12)
        assert error and "argument 'digest' binds a proposal" in text
    with p.db.session() as session:
        cmd, skill = session.exec(select(HumanCommand).order_by(col(HumanCommand.id))).all()
    assert (cmd.verb, cmd.actor, cmd.channel, cmd.skill, cmd.fix) == (
        "approve",
        "token:ann",
        "token",
        "proposal",
        shown["proposal"]["digest"],  # bound to the text the client was shown, whole
    )
    assert (skill.skill, skill.fix) == ("web-fix", None)
    assert [e.actor for e in audit(p.db, "human.approve")] == ["token:ann"] * 2


async def test_no_result_holds_a_secret_of_an_incident(home: GuardHome) -> None:
    p = parts(home)
    actor = stdio_actor()
    tools = GuardTools(p, stdio_gate(actor, Role.viewer, p))
    said = f"ERROR push refused for token {SECRET}"
    inc = stored_incident_id(p.db, title=said, message=said, details={"line": said})
    async with client(tools, actor) as c:
        texts = [
            (await call(c, "list_incidents"))[0],
            (await call(c, "show_incident", id=inc))[0],
            *(
                getattr(x, "text", "")
                for x in (await c.read_resource(f"guard://incidents/{inc}")).contents
            ),
            *(r.description or "" for r in (await c.list_resources()).resources),
        ]
    assert all("push refused for token" in t for t in texts)
    assert not [t for t in texts if SECRET in t]
    assert all("[REDACTED" in t for t in texts)


async def test_a_long_incident_is_whole_json_without_its_oldest_entries(home: GuardHome) -> None:
    p = parts(home)
    actor = stdio_actor()
    tools = GuardTools(p, stdio_gate(actor, Role.viewer, p))
    inc = stored_incident_id(p.db)
    with p.db.session() as session:
        row = session.get(Incident, inc)
        assert row is not None
        for i in range(40):
            record(session, row, "note", f"entry {i} " + "x" * 2000, actor="agent")
    async with client(tools, actor) as c:
        text, error = await call(c, "show_incident", id=inc)
    data = unfenced(text, "show_incident")
    shown = json.loads(data)  # whole JSON, though the timeline alone is 80,000 characters
    assert not error and len(data) <= READ_CHARS
    assert shown["timeline_dropped"] > 0 and shown["timeline"][-1]["message"].startswith("entry 39")


async def test_show_incident_names_the_related_signals_as_incidents_show_does(
    home: GuardHome,
) -> None:
    from guard.store.correlation import RelatedSignal

    p = parts(home)
    actor = stdio_actor()
    tools = GuardTools(p, stdio_gate(actor, Role.viewer, p))
    inc = stored_incident_id(p.db)
    with p.db.session() as session:
        for fingerprint, kind in (("a", "upstream_refused"), ("b", "bad_gateway")):
            session.add(
                RelatedSignal(
                    incident_id=inc, fingerprint=fingerprint, check_key=fingerprint,
                    monitor_id="shop-log", source="logfile", target="/var/log/shop.log",
                    kind=kind, severity="error", count=2, status="event",
                )
            )  # fmt: skip
    async with client(tools, actor) as c:
        shown = json.loads(unfenced((await call(c, "show_incident", id=inc))[0]))
    (log,) = shown["related"]  # one monitor on one target: one related signal
    assert log["monitor"] == "shop-log" and log["kinds"] == ["upstream_refused", "bad_gateway"]
    assert log["count"] == 4 and log["status"] == "event"
