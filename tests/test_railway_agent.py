"""The agent heals a crashed Railway deployment with the built-in skill, end to end."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from railway_server import RailwayServer, railway_config, serve_railway
from sqlmodel import col, select

from guard.app import Guard
from guard.store.models import Incident, IncidentTimeline

REPO = Path(__file__).resolve().parent.parent
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
        timeline = s.exec(select(IncidentTimeline).where(IncidentTimeline.incident_id == inc.id)
                          .order_by(col(IncidentTimeline.id))).all()
    assert inc.state == "resolved"
    assert inc.details["resolved_by"] == "railway-restart-crashed"
    assert any("railway-restart-crashed" in t.message for t in timeline if t.to_state == "resolved")
