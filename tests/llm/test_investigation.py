"""The investigation in process (local sandbox backend, scripted model servers): the proposal
is the first option and runs only once approved; a model that repeats itself, never stops,
sends malformed arguments, fails or overspends is cut off and the human gets the findings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import col, select

from guard.agent.loop import Agent
from guard.app.compose import compose_agent
from guard.config import Settings
from guard.incidents.commands import queue_command
from guard.notify.base import HumanRequest, IncidentUpdate
from guard.store.models import IncidentTimeline, RemediationRun, Trajectory
from guard.util.commandtext import digest
from tests.fakes.model import ModelServer, call, error
from tests.helpers.agent import as_cli, stored_incident

pytestmark = pytest.mark.unit


class Memory:
    def warm(self) -> None: ...
    def close(self) -> None: ...
    def remember(self, incident: Any, *, resolution: str, skill: str = "") -> None: ...

    def search(self, text: str, limit: int = 5) -> list[Any]:
        return []


class Notifier:
    def __init__(self) -> None:
        self.asked: list[HumanRequest] = []

    async def ask(self, request: HumanRequest) -> None:
        self.asked.append(request)

    async def update(self, update: IncidentUpdate) -> None: ...
    async def send_text(self, text: str) -> None: ...
    async def flush(self) -> None: ...


def make_agent(
    tmp_path: Path,
    llm: dict[str, Any] | None,
    *,
    source: str = "http",
    target: str = "http://svc/healthz",
    message: str = "HTTP 503 service unavailable",
) -> tuple[Agent, Notifier, int]:
    settings = Settings(
        data_dir=tmp_path,
        skills_dir=tmp_path / "skills",
        playbooks_dir=tmp_path / "pb",
        sandbox={"backend": "local", "timeout": 10},
        agent={"verify_timeout": "1s"},
        llm=llm or {},
    )
    (tmp_path / "skills").mkdir(parents=True, exist_ok=True)
    notifier = Notifier()
    agent = compose_agent(settings, settings_db(settings), [], notifier=notifier, memory=Memory())  # type: ignore[arg-type]
    with agent.db.session() as s:
        inc = stored_incident(s, check_key="web", source=source, target=target, message=message)
        return agent, notifier, inc.id


def settings_db(settings: Settings) -> Any:
    from guard.store.db import open_database

    return open_database(settings.database_url)


def trajectory(agent: Agent, inc_id: int) -> Trajectory:
    with agent.db.session() as s:
        row = s.exec(
            select(Trajectory)
            .where(Trajectory.incident_id == inc_id)
            .order_by(col(Trajectory.id).desc())
        ).first()
    assert row is not None
    return row


def timeline(agent: Agent, inc_id: int, type_: str) -> list[IncidentTimeline]:
    with agent.db.session() as s:
        return list(
            s.exec(
                select(IncidentTimeline).where(
                    IncidentTimeline.incident_id == inc_id, IncidentTimeline.type == type_
                )
            ).all()
        )


def tool_results(server: ModelServer) -> list[str]:
    """The tool results the server received in its last request (either wire format)."""
    found = []
    for m in server.requests[-1]["messages"]:
        if m["role"] == "tool":
            found.append(m["content"])
        elif isinstance(m.get("content"), list):
            found += [b["content"] for b in m["content"] if b.get("type") == "tool_result"]
    return found


async def test_the_proposal_is_shown_first_and_runs_only_when_a_human_approves(
    tmp_path: Path, model_server: ModelServer
) -> None:
    model_server.script = [
        call("sandbox_run", command="echo probe-$((6*7))"),
        call("propose_remedy", fix="echo restarting", reason="the probe says so", confidence=0.7),
    ]
    agent, notifier, inc_id = make_agent(tmp_path, model_server.config())
    try:
        await agent.handle(inc_id)
        assert model_server.refusals == []
        assert any("probe-42" in r for r in tool_results(model_server))  # the output went back
        (request,) = notifier.asked
        assert request.options[0].name == "proposal"
        assert request.options[0].command == "echo restarting"  # shown whole, and bound
        assert request.options[0].digest == digest("echo restarting")
        assert "probe-42" in request.evidence  # the findings reach the human
        inc = agent.lifecycle.load(inc_id)
        assert inc is not None and inc.state == "awaiting_human"
        assert inc.details["options"][0] == "proposal"
        assert inc.details["proposal"] == {
            "fix": "echo restarting",
            "reason": "the probe says so",
            "confidence": 0.7,
            "model": f"{model_server.kind}:scripted-1",
        }
        with agent.db.session() as s:
            assert s.exec(select(RemediationRun)).all() == []  # nothing ran
        cmd = queue_command(
            agent.db,
            incident_id=inc_id,
            verb="approve",
            **as_cli("ann"),
            fix=request.options[0].digest,  # what the button or `guard approve` was shown
        )
        await agent.process_command(cmd)
        with agent.db.session() as s:
            (run,) = s.exec(select(RemediationRun)).all()
        assert (run.fix, run.approved_by, run.origin) == ("echo restarting", "cli:ann", "human")
        row = trajectory(agent, inc_id)
        assert row.outcome["stop_reason"] == "proposed"
        assert row.outcome["human_decision"] == "approved_proposal"
        assert row.outcome["verified"] is False  # no monitor "web" to verify it
        assert row.tool_stats["sandbox_run"] == {"count": 1, "success": 1, "failure": 0}
        assert row.usage["calls"] == 2 and row.usage["total_tokens"] > 0
    finally:
        await agent.shutdown()


async def test_an_identical_repeated_call_is_refused(
    tmp_path: Path, openai_server: ModelServer
) -> None:
    openai_server.script = [
        call("list_skills"),
        call("list_skills"),
        call("propose_remedy", fix="echo x", reason="r", confidence=0.5),
    ]
    agent, _, inc_id = make_agent(tmp_path, openai_server.config())
    try:
        await agent.handle(inc_id)
        assert "refused: you already made this exact call" in tool_results(openai_server)[-1]
        assert trajectory(agent, inc_id).tool_stats["list_skills"] == {
            "count": 2,
            "success": 1,
            "failure": 1,
        }
    finally:
        await agent.shutdown()


@pytest.mark.parametrize(
    "endless",
    [
        lambda n: call("sandbox_run", command=f"echo step {n}"),  # never stops
        lambda n: call("sandbox_run", '{"command": "ls"'),  # malformed JSON arguments
    ],
)
async def test_a_model_that_never_stops_is_cut_off_and_the_human_gets_the_findings(
    tmp_path: Path, openai_server: ModelServer, endless: Any
) -> None:
    openai_server.default = endless
    agent, notifier, inc_id = make_agent(tmp_path, openai_server.config(max_steps=4))
    try:
        await agent.handle(inc_id)
        assert len(openai_server.requests) == 4
        assert all("tools" in r for r in openai_server.requests[:3])
        assert "tools" not in openai_server.requests[3]  # the last turn must answer
        assert openai_server.refusals == []
        inc = agent.lifecycle.load(inc_id)
        assert inc is not None and inc.state == "awaiting_human" and "proposal" not in inc.details
        (note,) = timeline(agent, inc_id, "investigated")
        assert note.data["stop_reason"] == "max_steps"
        (request,) = notifier.asked
        assert "Model investigation" in request.evidence and "sandbox_run" in request.evidence
        assert [o.name for o in request.options] == []
        results = tool_results(openai_server)
        if "step" in results[0]:
            assert "step 0" in results[0]
        else:
            assert all("not valid JSON" in r for r in results)
    finally:
        await agent.shutdown()


async def test_a_failing_endpoint_fails_over_and_one_that_keeps_failing_leaves_findings(
    tmp_path: Path, openai_server: ModelServer, second_server: ModelServer
) -> None:
    openai_server.script = [call("list_skills")]
    openai_server.default = lambda n: error(429, retry_after=0.01)
    second_server.script = [call("propose_remedy", fix="echo ok", reason="r", confidence=0.9)]
    agent, notifier, inc_id = make_agent(
        tmp_path, openai_server.config(retries=1, fallback=[second_server.config()])
    )
    try:
        await agent.handle(inc_id)
        assert openai_server.statuses == [200, 429, 429]
        inc = agent.lifecycle.load(inc_id)
        assert inc is not None and inc.details["proposal"]["fix"] == "echo ok"
        assert second_server.refusals == []  # it took the conversation over mid-way
    finally:
        await agent.shutdown()
    for s in (openai_server, second_server):
        s.script, s.default = [], (lambda n: error(500))
    agent, notifier, inc_id = make_agent(
        tmp_path / "again",
        openai_server.config(retries=1, fallback=[second_server.config(retries=1)]),
    )
    try:
        await agent.handle(inc_id)
        inc = agent.lifecycle.load(inc_id)
        assert inc is not None and inc.state == "awaiting_human"
        (note,) = timeline(agent, inc_id, "investigated")
        assert note.data["stop_reason"] == "error" and "HTTP 500" in note.message
        assert "HTTP 500" in notifier.asked[0].evidence
    finally:
        await agent.shutdown()


async def test_budgets_caps_and_compaction(tmp_path: Path, openai_server: ModelServer) -> None:
    openai_server.default = lambda n: call("sandbox_run", command=f"seq {n} 3000")
    agent, _, inc_id = make_agent(
        tmp_path, openai_server.config(max_tokens=6000, tool_result_chars=200, context_chars=3000)
    )
    try:
        await agent.handle(inc_id)
        row = trajectory(agent, inc_id)
        assert row.outcome["stop_reason"] == "token_budget"
        assert row.usage["total_tokens"] >= 6000
        results = [m["content"] for m in row.messages if m["role"] == "tool"]
        assert "[truncated:" in results[-1] and len(results[-1]) < 400
        assert results[0].startswith("[compacted:")
    finally:
        await agent.shutdown()
    agent, _, inc_id = make_agent(tmp_path / "wall", openai_server.config(max_wall=1e-6))
    try:
        await agent.handle(inc_id)
        assert trajectory(agent, inc_id).outcome["stop_reason"] == "wall_clock"
        assert agent.lifecycle.load(inc_id).state == "awaiting_human"  # type: ignore[union-attr]
    finally:
        await agent.shutdown()


async def test_a_secret_a_tool_result_holds_never_reaches_the_model(
    tmp_path: Path, model_server: ModelServer
) -> None:
    secret = model_server.api_key  # a configured secret (llm.api_key)
    log = tmp_path / "api.log"
    log.write_text(f"INFO boot\nERROR auth failed with key {secret}\n")
    model_server.script = [
        call("recent_logs", lines=10),
        call("propose_remedy", fix="echo rotate", reason="bad key", confidence=0.6),
    ]
    agent, _, inc_id = make_agent(
        tmp_path,
        model_server.config(),
        source="logfile",
        target=str(log),
        message=f"auth failed with key {secret}",
    )
    try:
        await agent.handle(inc_id)
        assert model_server.refusals == [] and len(model_server.bodies) == 2
        assert secret not in model_server.sent
        assert "ERROR auth failed with key [REDACTED" in model_server.sent
        assert secret not in json.dumps(trajectory(agent, inc_id).messages)
    finally:
        await agent.shutdown()


async def test_without_a_model_nothing_is_investigated_but_the_handling_is_recorded(
    tmp_path: Path,
) -> None:
    agent, notifier, inc_id = make_agent(tmp_path, None)
    try:
        assert agent.investigator is None
        await agent.handle(inc_id)
        assert timeline(agent, inc_id, "investigated") == []
        assert "proposal" not in agent.lifecycle.load(inc_id).details  # type: ignore[union-attr]
        row = trajectory(agent, inc_id)
        assert row.model is None and row.tools == []
        assert row.outcome["stop_reason"] == "no_model" and row.outcome["proposal"] is None
        assert notifier.asked[0].evidence == ""
    finally:
        await agent.shutdown()
