"""The agent heals a crashed Railway deployment with the built-in skill, end to end."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from sqlmodel import col, select

from guard.app import Guard
from guard.store.models import Incident, IncidentTimeline
from tests.fakes.railway import RailwayServer, railway_config, serve_railway

REPO = Path(__file__).resolve().parents[2]
PLAYBOOK = """\
name: railway
monitors:
  - id: api-railway
    type: railway
    service: api
    environment: production
    every: 30s
"""


@pytest.fixture
def railway() -> Iterator[RailwayServer]:
    yield from serve_railway()


async def test_builtin_skill_restarts_the_crashed_deployment_and_resolves(home, railway):
    dep = railway.state.deploy(status="CRASHED")
    skills = home.root / "skills"
    skills.mkdir()
    shutil.copytree(REPO / "skills" / "railway-restart-crashed", skills / "railway-restart-crashed")
    home.write_config({"railway": railway_config(railway), "agent": {"verify_timeout": "5s"}})
    (home.playbooks / "railway.yaml").write_text(PLAYBOOK)

    events = await Guard(home.settings(), home.playbooks_loaded()).run_once(heal=True)
    assert [e.type for e in events] == ["opened"]

    [restart] = railway.ops("GuardDeploymentRestart")
    assert restart.variables == {"id": dep["id"]}
    with home.database().session() as s:
        inc = s.exec(select(Incident)).one()
        timeline = s.exec(
            select(IncidentTimeline)
            .where(IncidentTimeline.incident_id == inc.id)
            .order_by(col(IncidentTimeline.id))
        ).all()
    assert inc.state == "resolved"
    assert inc.details["resolved_by"] == "railway-restart-crashed"
    assert any("railway-restart-crashed" in t.message for t in timeline if t.to_state == "resolved")


async def test_a_log_rule_incident_is_verified_from_the_monitors_cursor(home, railway):
    """After a restart, "no new matching line for the quiet period" cures a log incident, read
    from where the monitor is, with the ids it resolved (no project lookups per attempt)."""
    dep = railway.state.deploy(status="SUCCESS")
    skills = home.root / "skills"
    shutil.copytree(REPO / "skills" / "railway-restart-crashed", skills / "restart-on-fatal")
    spec = yaml.safe_load((skills / "restart-on-fatal" / "skill.yaml").read_text())
    spec["triggers"] = [{"source": "railway", "kind": "db_too_many_connections"}]
    spec.pop("diagnostics", None)  # counted below: the restart's and verification's lookups
    spec["steps"][-1] = {"verify": {"timeout": "10s", "interval": "200ms", "quiet": "500ms"}}
    (skills / "restart-on-fatal" / "skill.yaml").write_text(yaml.safe_dump(spec))
    md = skills / "restart-on-fatal" / "SKILL.md"
    md.write_text(md.read_text().replace("name: railway-restart-crashed", "name: restart-on-fatal"))
    home.write_config({"railway": railway_config(railway)})
    (home.playbooks / "railway.yaml").write_text(
        PLAYBOOK
        + """\
    rules:
      - kind: db_too_many_connections
        pattern: "too many clients"
        severity: critical
"""
    )
    await Guard(home.settings(), home.playbooks_loaded()).run_once()  # the monitor starts
    railway.state.log(
        dep["id"], "FATAL: sorry, too many clients already", at="2026-12-02T10:00:05Z"
    )
    lookups = len(railway.ops("GuardProject"))

    events = await Guard(home.settings(), home.playbooks_loaded()).run_once(heal=True)
    assert [e.type for e in events] == ["opened"]
    assert [op.variables for op in railway.ops("GuardDeploymentRestart")] == [{"id": dep["id"]}]
    with home.database().session() as s:
        inc = s.exec(select(Incident)).one()
    assert inc.target == "production/api:logs" and inc.state == "resolved", inc.details
    assert inc.details["resolved_by"] == "restart-on-fatal"
    # the restart action resolves "api" once; verification used the monitor's ids
    assert len(railway.ops("GuardProject")) == lookups + 1
