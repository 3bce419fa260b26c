"""Railway end to end: a real client against a schema-validating local Railway, through Guard.

The server (tests/fakes/railway.py) rejects any query that is not valid against Railway's
real schema, so every test here also proves the queries Guard sends are well-formed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from loguru import logger
from sqlmodel import select

from guard.actions.base import ActionContext, ActionError
from guard.actions.registry import ActionRegistry
from guard.app import Guard
from guard.railway import queries
from guard.store.models import Incident
from tests.fakes.railway import (
    ACCOUNT_TOKEN,
    PROJECT_TOKEN,
    Fault,
    RailwayServer,
    railway_config,
    serve_railway,
    validate,
)

PLAYBOOK = """\
name: railway
monitors:
  - id: api-railway
    type: railway
    service: api            # name or id
    environment: production # name or id; defaults to railway.environment_id
    every: 30s
    rules:
      - kind: db_too_many_connections
        pattern: "too many clients"
        severity: critical
"""


@pytest.fixture
def railway() -> Iterator[RailwayServer]:
    yield from serve_railway()


def setup_home(
    home: Any, server: RailwayServer, playbook: str = PLAYBOOK, **railway_extra: Any
) -> None:
    home.write_config({"railway": railway_config(server, **railway_extra)})
    (home.playbooks / "railway.yaml").write_text(playbook)


async def run_guard(home: Any) -> list[Any]:
    """One check of every monitor by a fresh Guard (a restart, each time)."""
    return await Guard(home.settings(), home.playbooks_loaded()).run_once()


def incidents(home: Any, kind: str | None = None) -> list[Incident]:
    with home.database().session() as s:
        rows = s.exec(select(Incident)).all()
    return [i for i in rows if kind is None or i.kind == kind]


def test_every_query_guard_sends_is_valid_against_railways_schema():
    for name, document in queries.ALL.items():
        assert validate(document) == [], name
    assert len(queries.ALL) == 10


async def test_crashed_deployment_opens_incident_and_restart_resolves_it(home, railway):
    dep = railway.state.deploy(status="CRASHED")
    setup_home(home, railway)
    events = await run_guard(home)
    assert [e.type for e in events] == ["opened"]
    [inc] = incidents(home, "railway_deployment_crashed")
    assert inc.source == "railway" and inc.target == "production/api"
    assert inc.details["deployment_id"] == dep["id"]
    assert inc.details["service_id"] == railway.state.service("api")["id"]
    assert inc.details["status"] == "CRASHED"

    action = ActionRegistry().get("railway.restart")
    ctx = ActionContext(home.settings(), incident={"details": inc.details})
    result = await action.run({"service": inc.details["service_id"]}, ctx)
    assert result.ok, result
    assert result.details["deployment_id"] == dep["id"]
    [restart] = railway.ops("GuardDeploymentRestart")
    assert restart.variables == {"id": dep["id"]} and restart.auth == "bearer"

    events = await run_guard(home)
    assert [e.type for e in events] == ["resolved"]
    [inc] = incidents(home, "railway_deployment_crashed")
    assert inc.state == "resolved"
    # Ids were resolved once and kept in the monitor state: the restart cost no project query.
    assert len(railway.ops("GuardProject")) == 2  # one by the first check, one by the action


async def test_failed_deploy_rolls_back_to_the_last_success_guard_saw(home, railway):
    good = railway.state.deploy(status="SUCCESS")
    setup_home(home, railway)
    assert await run_guard(home) == []
    bad = railway.state.deploy(status="FAILED")
    railway.state.deploy(service="worker", status="SUCCESS")  # another service: not a candidate
    await run_guard(home)
    [inc] = incidents(home, "railway_deployment_failed")
    assert inc.details["deployment_id"] == bad["id"]
    assert inc.details["last_success_deployment_id"] == good["id"]
    result = (
        await ActionRegistry()
        .get("railway.rollback")
        .run({"service": "api"}, ActionContext(home.settings(), incident={"details": inc.details}))
    )
    assert result.ok and result.details["rollback_to"] == good["id"]
    assert [c.variables for c in railway.ops("GuardDeploymentRollback")] == [{"id": good["id"]}]
    events = await run_guard(home)
    assert [e.type for e in events] == ["resolved"]


async def test_rollback_without_history_picks_newest_success_in_railway(home, railway):
    older = railway.state.deploy(status="SUCCESS")
    newer = railway.state.deploy(status="SUCCESS")
    railway.state.deploy(status="CRASHED")
    setup_home(home, railway)
    result = (
        await ActionRegistry()
        .get("railway.rollback")
        .run({"service": "api", "environment": "production"}, ActionContext(home.settings()))
    )
    assert result.details["rollback_to"] == newer["id"] != older["id"]
    [call] = railway.ops("GuardDeployments")
    assert call.variables["input"]["status"] == {"in": ["SUCCESS"]}


async def test_redeploy_creates_a_new_deployment(home, railway):
    dep = railway.state.deploy(status="CRASHED")
    setup_home(home, railway)
    result = (
        await ActionRegistry()
        .get("railway.redeploy")
        .run({"service": "api"}, ActionContext(home.settings()))
    )
    assert result.ok and result.details["deployment_id"] == dep["id"]
    assert result.details["new_deployment_id"] == railway.state.deployments[-1]["id"]


async def test_redeploy_without_a_deployment_asks_for_the_service_instance(home, railway):
    """No deployment Guard can see: it falls back to serviceInstanceRedeploy, and Railway's
    refusal (there is nothing to redeploy) comes back as a clear action error."""
    setup_home(home, railway)  # the service exists; nothing was ever deployed
    with pytest.raises(ActionError, match="No deployment to redeploy"):
        await (
            ActionRegistry()
            .get("railway.redeploy")
            .run({"service": "api"}, ActionContext(home.settings()))
        )
    [call] = railway.ops("GuardServiceInstanceRedeploy")
    assert set(call.variables) == {"environmentId", "serviceId"} and call.problems == []


async def test_log_rule_opens_incident_and_cursor_survives_restarts(home, railway):
    dep = railway.state.deploy(status="SUCCESS")
    railway.state.log(
        dep["id"], "FATAL: sorry, too many clients already", at="2026-12-02T10:00:00.000000001Z"
    )
    setup_home(home, railway)
    assert await run_guard(home) == []  # start: end skips what was logged before Guard came
    t = "2026-12-02T10:00:05.123456789Z"
    for _ in range(2):  # identical lines at one instant: both count
        railway.state.log(dep["id"], "FATAL: sorry, too many clients already", at=t)
    railway.state.log(dep["id"], "GET /health 200", at=t)
    events = await run_guard(home)
    assert [e.type for e in events] == ["opened"]
    [inc] = incidents(home, "db_too_many_connections")
    assert inc.count == 2 and inc.severity == "critical" and inc.target == "production/api:logs"
    assert inc.details["deployment_id"] == dep["id"]

    # A new Guard over the same database: the cursor is where the last one left it.
    assert await run_guard(home) == []
    assert incidents(home, "db_too_many_connections")[0].count == 2
    assert railway.ops("GuardDeploymentLogs")[-1].variables["startDate"] == t
    railway.state.log(dep["id"], "FATAL: sorry, too many clients already", at=t)  # a third at t
    railway.state.log(
        dep["id"], "FATAL: sorry, too many clients already", at="2026-12-02T10:00:06Z"
    )
    await run_guard(home)
    [inc] = incidents(home, "db_too_many_connections")
    assert inc.count == 4 and inc.state == "open"  # SUCCESS did not resolve the log incident


async def test_new_deployment_logs_are_read_from_their_first_line(home, railway):
    first = railway.state.deploy(status="SUCCESS")
    setup_home(home, railway)
    await run_guard(home)
    second = railway.state.deploy(status="SUCCESS")
    railway.state.log(second["id"], "too many clients", at="2026-12-02T11:00:00Z")
    await run_guard(home)
    [inc] = incidents(home, "db_too_many_connections")
    assert inc.details["deployment_id"] == second["id"] != first["id"]
    # A deployment never read is read from its creation, not from "the last N lines".
    assert railway.ops("GuardDeploymentLogs")[-1].variables["startDate"] == second["createdAt"]


async def test_build_rules_read_build_logs(home, railway):
    dep = railway.state.deploy(status="FAILED")
    railway.state.log(dep["id"], "npm ERR! code ERESOLVE", build=True, at="2026-12-02T09:00:00Z")
    book = PLAYBOOK.replace(
        "    rules:",
        "    start: beginning\n    build_rules:\n"
        "      - kind: npm_dependency_conflict\n"
        "        pattern: ERESOLVE\n    rules:",
    )
    setup_home(home, railway, playbook=book)
    await run_guard(home)
    kinds = {i.kind for i in incidents(home)}
    assert {"railway_deployment_failed", "npm_dependency_conflict"} <= kinds
    assert len(railway.ops("GuardBuildLogs")) == 1


@pytest.mark.parametrize(
    "fault,expect",
    [
        (Fault(status=500), "HTTP 500"),
        (Fault(status=429, headers={"Retry-After": "0.2"}), "rate limited by Railway"),
        (Fault(delay=0.8), "no answer within 0.5s"),
    ],
)
async def test_persistent_failures_are_retried_then_become_monitor_errors(
    home, railway, fault, expect
):
    railway.state.deploy(status="SUCCESS")
    setup_home(home, railway, timeout=0.5)
    railway.faults.extend([fault] * 3)  # retries: 2, so three attempts all fail
    delays: list[float] = []  # what the client decided to wait (not how long it took)
    sink = logger.add(
        lambda m: delays.append(float(m.record["message"].rsplit(" in ", 1)[1][:-1])),
        filter=lambda r: "; retry " in r["message"],
        level="WARNING",
    )
    try:
        await run_guard(home)  # must not raise
    finally:
        logger.remove(sink)
    [err] = incidents(home, "monitor_error")
    assert expect in err.message and "gave up after 3 attempts" in err.message, err.message
    assert len(railway.calls) == 3
    gaps = [b.at - a.at for a, b in zip(railway.calls, railway.calls[1:], strict=False)]
    assert len(delays) == 2
    if fault.status == 429:
        assert delays == [0.2, 0.2]  # Retry-After honoured, not the 0.05s backoff
        assert all(g >= 0.2 for g in gaps)  # and really waited
    elif fault.status == 500:
        assert delays[1] > delays[0] * 1.3  # exponential backoff (x2, jitter 0.8-1.2)
    # The next check works again and resolves the monitor_error incident.
    assert [e.type for e in await run_guard(home)] == ["resolved"]


async def test_transient_failures_are_retried_invisibly(home, railway):
    railway.state.deploy(status="CRASHED")
    # a 3 s timeout: a loaded machine answered a good request in over 0.5 s (a CI run)
    setup_home(home, railway, retries=3, timeout=3)
    railway.faults.extend(
        [Fault(status=502), Fault(status=429, headers={"Retry-After": "0"}), Fault(delay=4)]
    )
    await run_guard(home)
    assert incidents(home, "monitor_error") == []
    assert len(incidents(home, "railway_deployment_crashed")) == 1
    assert len(railway.ops("GuardProject")) == 4  # three failed attempts, then the answer


async def test_graphql_errors_are_reported_with_railways_message(home, railway):
    railway.state.deploy(status="SUCCESS")
    setup_home(home, railway)
    railway.faults.append(Fault(error="You are not authorized to access this project"))
    await run_guard(home)
    [err] = incidents(home, "monitor_error")
    assert "You are not authorized to access this project" in err.message
    assert "check railway.token" in err.message
    assert len(railway.calls) == 1  # not retried: trying again would not help


async def test_unknown_service_names_the_known_ones(home, railway):
    setup_home(home, railway, playbook=PLAYBOOK.replace("service: api ", "service: apx "))
    await run_guard(home)
    [err] = incidents(home, "monitor_error")
    assert "no Railway service named 'apx'" in err.message and "api, worker" in err.message


async def test_project_token_uses_its_own_header_and_scope(home, railway):
    dep = railway.state.deploy(status="CRASHED")
    config = railway_config(railway)
    for key in ("token", "project_id", "environment_id"):
        config.pop(key)
    home.write_config({"railway": {**config, "project_token": PROJECT_TOKEN}})
    (home.playbooks / "railway.yaml").write_text(
        PLAYBOOK.replace(
            "    environment: production # name or id; defaults to railway.environment_id\n", ""
        )
    )
    await run_guard(home)
    [inc] = incidents(home, "railway_deployment_crashed")
    assert inc.details["deployment_id"] == dep["id"]
    assert {c.auth for c in railway.calls} == {"project"}
    assert railway.ops("GuardProjectToken")


async def test_on_railway_guard_watches_its_own_project_and_environment(home, railway, monkeypatch):
    dep = railway.state.deploy(status="CRASHED")
    monkeypatch.setenv("RAILWAY_PROJECT_ID", railway.state.project["id"])
    monkeypatch.setenv("RAILWAY_ENVIRONMENT_ID", railway.state.environment("production")["id"])
    config = railway_config(railway)
    config.pop("project_id"), config.pop("environment_id")
    home.write_config({"railway": config})
    (home.playbooks / "railway.yaml").write_text(
        PLAYBOOK.replace(
            "    environment: production # name or id; defaults to railway.environment_id\n", ""
        )
    )
    settings = home.settings()
    assert settings.railway.project_id == railway.state.project["id"]
    await run_guard(home)
    [inc] = incidents(home, "railway_deployment_crashed")
    assert inc.details["environment_id"] == railway.state.environment("production")["id"]
    assert inc.details["deployment_id"] == dep["id"]


async def test_tokens_never_reach_the_logs(home, railway):
    from loguru import logger

    lines: list[str] = []
    sink = logger.add(lines.append, level="DEBUG")
    try:
        railway.state.deploy(status="SUCCESS")
        setup_home(home, railway)
        railway.faults.extend([Fault(status=500)] * 3)
        await run_guard(home)
    finally:
        logger.remove(sink)
    assert any("HTTP 500" in line for line in lines)
    assert not any(ACCOUNT_TOKEN in line for line in lines)
