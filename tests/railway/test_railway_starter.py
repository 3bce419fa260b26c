"""The two Railway starter skills attach the deployment's own account before they act, against
the tests' Railway API server (tests/fakes/railway.py): a crashed deployment's question, and
its run, carry its status and last deploy log lines (``railway.logs``); a failed deployment's
carry its build log, then its deploy log. Both still heal as before (restart, rollback),
verified by the monitor's next check."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from sqlmodel import select

from guard.app import Guard
from guard.store.models import Incident
from tests.fakes.railway import RailwayServer, railway_config, serve_railway
from tests.railway.test_railway_agent import PLAYBOOK, REPO


@pytest.fixture
def railway() -> Iterator[RailwayServer]:
    yield from serve_railway()


async def heal(home, railway: RailwayServer, skill: str) -> Incident:  # type: ignore[no-untyped-def]
    skills = home.root / "skills"
    skills.mkdir(exist_ok=True)
    shutil.copytree(REPO / "skills" / skill, skills / skill)
    home.write_config({"railway": railway_config(railway), "agent": {"verify_timeout": "5s"}})
    (home.playbooks / "railway.yaml").write_text(PLAYBOOK)
    events = await Guard(home.settings(), home.playbooks_loaded()).run_once(heal=True)
    assert [e.type for e in events] == ["opened"]
    with home.database().session() as s:
        inc = s.exec(select(Incident)).one()
    assert inc.state == "resolved" and inc.details["resolved_by"] == skill, inc.details
    return inc


async def test_a_crashed_deployment_s_deploy_log_is_the_evidence_then_it_restarts(
    home, railway
) -> None:
    dep = railway.state.deploy(status="CRASHED")
    railway.state.log(dep["id"], "listening on :8080")
    railway.state.log(dep["id"], "Error: connect ECONNREFUSED 10.0.0.7:6379", severity="error")
    inc = await heal(home, railway, "railway-restart-crashed")
    evidence = inc.details["evidence"]
    assert evidence.startswith("$ railway.logs service=")
    assert f"deployment {dep['id']} of production/api: CRASHED; its last deploy log" in evidence
    assert "Error: connect ECONNREFUSED 10.0.0.7:6379" in evidence
    assert [op.variables for op in railway.ops("GuardDeploymentRestart")] == [{"id": dep["id"]}]
    print(evidence)


async def test_a_failed_deployment_s_build_log_is_the_evidence_then_it_rolls_back(
    home, railway
) -> None:
    good = railway.state.deploy(status="SUCCESS")
    bad = railway.state.deploy(status="FAILED")
    railway.state.log(bad["id"], 'npm ERR! Missing script: "build"', build=True)
    inc = await heal(home, railway, "railway-rollback-failed-deploy")
    evidence = inc.details["evidence"]
    assert f"deployment {bad['id']} of production/api: FAILED; its last build log" in evidence
    assert 'npm ERR! Missing script: "build"' in evidence
    assert "its last deploy log lines:\n(no log lines)" in evidence
    assert [op.variables for op in railway.ops("GuardDeploymentRollback")] == [{"id": good["id"]}]
