"""Guard over MCP, with the SDK's own client, against a real `guard run` and the real engine.

One Guard watches labelled containers and a log file. A container that exits and a log line
carrying a secret raise incidents; MCP clients over streamable HTTP (tokens of each role) and
over stdio (`guard mcp`) read them, run commands in the sandbox, propose a fix that an
approver token approves (it runs, is verified and learned), and find the incident again in
memory by a paraphrase. No result ever holds the secret; refusals name the missing role and
are audited.
"""

from __future__ import annotations

import asyncio
import getpass
import json

import pytest

from guard.memory.semantic import SemanticMemory
from guard.skills.library import load_skill
from tests.agent.test_agent_learning import UNRELATED
from tests.conftest import GuardHome
from tests.helpers.agent import (
    db_rows,
    find,
    running_guard,
    sandboxes_of,
    setup_docker_home,
    show,
    wait_for,
)
from tests.mcp.helpers import (
    TEN,
    Transcript,
    create_token,
    over_http,
    over_stdio,
    unfenced,
)

pytestmark = pytest.mark.docker

# a GitHub token's shape, assembled so no file holds one
SECRET = "gh" + "p_" + "Zq8Xw3Lm5Np7Rt9Vb2Cd4Fg6Hj8Kl0Mn2Pq4"
PARAPHRASE = "the service process died unexpectedly and stopped"


def setup(home: GuardHome) -> dict[str, str]:
    labels = setup_docker_home(home)  # no skills: Guard asks a human about everything
    log = home.root / "api.log"
    log.write_text(f"INFO started\nERROR login to the registry failed with token {SECRET}\n")
    home.playbook(
        "api",
        [
            {
                "id": "api-log",
                "type": "logfile",
                "path": str(log),
                "start": "beginning",
                "every": "1s",
                "rules": [{"kind": "api_error", "pattern": r"\bERROR\b"}],
            }
        ],
    )
    memory = SemanticMemory(home.root / "data" / "memory.lance")
    for incident, resolution in UNRELATED:  # past incidents that are not container exits
        memory.remember(incident, resolution=resolution)
    memory.close()
    return labels


def audit_rows(home: GuardHome, like: str) -> list[tuple[str, str, dict]]:
    rows = db_rows(home, f"select actor, action, data from audit_log where action like '{like}'")
    return [(actor, action, json.loads(data)) for actor, action, data in rows]


# ~31 s alone; it met the 120 s default beside three busy workers (a human's fix now settles)
@pytest.mark.timeout(300)
def test_mcp_over_http_and_stdio_reads_runs_proposes_approves_and_remembers(
    home, containers, docker_client
):
    labels = setup(home)
    victim = containers.run("victim", "sleep 600", labels=labels)
    said = Transcript()
    with running_guard(home) as (proc, _):
        tokens = {
            role: create_token(home, f"{role}-bot", role)
            for role in ("viewer", "operator", "approver")
        }
        victim.kill()
        exited = wait_for(
            lambda: find(home, target=victim.name, state="awaiting_human"), 60, "the exit asked"
        )
        logged = wait_for(
            lambda: find(home, kind="api_error", state="awaiting_human"), 60, "the log line asked"
        )

        async def over_http_steps() -> None:
            async with over_http(home, tokens["viewer"]) as viewer:
                tools = await said.listing(viewer)
                assert set(tools) == TEN
                assert tools["sandbox_run"]["required"] == ["incident_id", "command"]
                assert tools["sandbox_run"]["properties"]["command"]["type"] == "string"
                assert tools["approve"]["properties"]["option"]["type"] == "string"
                assert tools["approve"]["properties"]["digest"]["type"] == "string"
                assert tools["list_incidents"]["required"] == []

                listed = await said.json(viewer, "list_incidents", state="awaiting_human")
                assert {i["id"] for i in listed} == {exited["id"], logged["id"]}
                shown = await said.json(viewer, "show_incident", id=exited["id"])
                assert shown["target"] == victim.name and shown["kind"] == "container_exited"
                assert shown["state"] == "awaiting_human"
                assert any(t["type"] == "asked_human" for t in shown["timeline"])
                read = await said.read(viewer, f"guard://incidents/{exited['id']}")
                resource = json.loads(unfenced(read, "show_incident"))
                assert resource["id"] == exited["id"] and resource["target"] == victim.name
                await said.ok(viewer, "show_incident", id=logged["id"])
                lines = await said.ok(viewer, "recent_logs", incident_id=logged["id"])
                assert "login to the registry failed" in lines and "[REDACTED" in lines

                for tool, args, role in (
                    ("sandbox_run", {"command": "id"}, "operator"),
                    ("approve", {}, "approver"),
                ):
                    text, error = await said.call(viewer, tool, incident_id=exited["id"], **args)
                    assert error and text == f"refused: needs {role}; you are viewer"

            async with over_http(home, tokens["operator"]) as operator:
                ran = await said.ok(
                    operator,
                    "sandbox_run",
                    incident_id=exited["id"],
                    command="hostname; id -u; echo incident=$GUARD_INCIDENT_ID",
                )
                assert "exit_code: 0" in ran and "sandbox" in ran
                assert f"incident={exited['id']}" in ran
                assert "\n0\n" not in ran  # not root
                assert sandboxes_of(docker_client, exited["id"], proc.pid)  # a real container
                offered = await said.ok(
                    operator,
                    "propose_remedy",
                    incident_id=exited["id"],
                    fix=f"docker.start {victim.name}",
                    reason="the container exited; start it again",
                )
                assert "offered as the first option" in offered
                shown = await said.json(operator, "show_incident", id=exited["id"])
                assert shown["options"][0] == "proposal"
                assert shown["proposal"]["fix"] == f"docker.start {victim.name}"
                assert shown["proposal"]["model"] == "token:operator-bot"

            async with over_http(home, tokens["approver"]) as approver:
                shown = await said.json(approver, "show_incident", id=exited["id"])
                bound = shown["proposal"]["digest"][:12]
                outcome = await said.ok(approver, "approve", incident_id=exited["id"], digest=bound)
                assert "saved as skill learned-" in outcome, outcome
                denied = await said.ok(approver, "deny", incident_id=logged["id"])
                assert denied.startswith("denied; no remedy will run"), denied
                assert f"guard resolve {logged['id']}" in denied  # deny offers to close

            async with over_http(home, tokens["viewer"]) as viewer:
                hits = await said.json(viewer, "search_memory", query=PARAPHRASE)
                assert hits[0]["incident"] == exited["id"], hits

        asyncio.run(over_http_steps())

        assert show(home, logged["id"])["state"] == "escalated"
        done = show(home, exited["id"])
        assert done["state"] == "resolved"
        learned = load_skill(home.root / "skills" / done["details"]["learned_skill"])
        assert learned.spec.steps[0].action == "docker.start"
        runs = db_rows(home, "select approved_by, status from remediation_run")
        assert runs == [("token:approver-bot", "verified")]
        victim.reload()
        assert victim.status == "running"

        async def over_stdio_steps() -> None:
            async with over_stdio(home) as agent:
                assert set(await said.listing(agent)) == TEN
                shown = await said.json(agent, "show_incident", id=logged["id"])
                assert shown["kind"] == "api_error" and shown["source"] == "logfile"
                ran = await said.ok(
                    agent, "sandbox_run", incident_id=logged["id"], command="hostname; id -u"
                )
                assert "exit_code: 0" in ran and "sandbox" in ran
                hits = await said.json(agent, "search_memory", query=PARAPHRASE)
                assert hits[0]["incident"] == exited["id"], hits
                skill = await said.read(agent, f"guard://skills/{learned.name}")
                assert "docker.start" in skill
                text, error = await said.call(agent, "deny", incident_id=logged["id"])
                assert error and text == "refused: needs approver; you are operator"

        asyncio.run(over_stdio_steps())

    assert not [t for t in said.texts if SECRET in t]  # in no result, over either transport
    assert any("[REDACTED" in t for t in said.texts)

    refused = audit_rows(home, "mcp.refused")
    assert [(a, d["tool"], d["reason"]) for a, _, d in refused] == [
        ("token:viewer-bot", "sandbox_run", "needs operator; you are viewer"),
        ("token:viewer-bot", "approve", "needs approver; you are viewer"),
        (f"mcp:stdio:{getpass.getuser()}", "deny", "needs approver; you are operator"),
    ]
    calls = audit_rows(home, "mcp.%")
    by = {(actor, action) for actor, action, _ in calls}
    assert ("token:operator-bot", "mcp.sandbox_run") in by
    assert ("token:approver-bot", "mcp.approve") in by
    assert (f"mcp:stdio:{getpass.getuser()}", "mcp.sandbox_run") in by
    assert not any(SECRET in json.dumps(d) for _, _, d in calls)
    answers = audit_rows(home, "human.%")
    assert ("token:approver-bot", "human.approve") in {(a, act) for a, act, _ in answers}
