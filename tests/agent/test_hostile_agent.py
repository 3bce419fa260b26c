"""Crash leftovers and per-step grants (issue 13, findings 6 and 4)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from sqlmodel import select

from guard.agent.loop import Agent
from guard.app.compose import compose_agent
from guard.config import Settings
from guard.domain.records import utcnow
from guard.store.db import open_database
from guard.store.models import (
    CommandStatus,
    HumanCommand,
    IncidentTimeline,
    RemediationRun,
    RunOrigin,
    RunStatus,
)
from tests.helpers.agent import stored_incident

pytestmark = pytest.mark.unit


def agent(tmp_path: Path, **kw: Any) -> Agent:
    settings = Settings(
        data_dir=tmp_path, skills_dir=tmp_path / "skills", playbooks_dir=tmp_path / "playbooks"
    )
    return compose_agent(
        settings, open_database(settings.database_url), [], sandboxes=cast(Any, object()), **kw
    )


def _incident(a: Agent, state: str = "escalated") -> int:
    with a.db.session() as s:
        return int(stored_incident(s, state).id)


async def test_commands_a_crash_left_running_are_reset_on_start(tmp_path: Path) -> None:
    a = agent(tmp_path)
    inc_id = _incident(a)
    earlier = utcnow() - timedelta(minutes=5)
    with a.db.session() as s:
        s.add(
            HumanCommand(
                incident_id=inc_id,
                verb="deny",
                actor="cli:ann",
                status=CommandStatus.running,
                created_at=earlier,
            )
        )
        s.add(
            HumanCommand(
                incident_id=inc_id,
                verb="reply",
                actor="cli:bob",
                fix="true",
                status=CommandStatus.running,
                created_at=earlier,
            )
        )
        s.add(
            RemediationRun(
                incident_id=inc_id,
                skill="human-fix",
                target="http://svc",
                origin=RunOrigin.human,
                approved_by="cli:bob",
                fix="true",
                status=RunStatus.failed,
                started_at=utcnow(),
            )
        )
    await a.resume()
    await a.drain()
    with a.db.session() as s:
        cmds = {c.verb: c for c in s.exec(select(HumanCommand)).all()}
        notes = [
            t.message
            for t in s.exec(
                select(IncidentTimeline).where(IncidentTimeline.type == "command_reset")
            ).all()
        ]
    assert cmds["deny"].status == "queued"  # nothing of it ran: it runs again
    assert cmds["reply"].status == "failed"  # it had started a remedy: not repeated
    assert "interrupted" in cmds["reply"].outcome
    assert len(notes) == 2 and all("interrupted by a restart" in n for n in notes)


async def test_each_step_gets_exactly_its_skills_grants(tmp_path: Path) -> None:
    from guard.config import SandboxSettings
    from guard.sandbox import SandboxGrants
    from guard.sandbox.pool import WarmSandboxPool

    pool = WarmSandboxPool(
        SandboxSettings(backend="local", timeout=10),
        environ={"FIRST_TOKEN": "first-secret", "SECOND_TOKEN": "second-secret"},
    )
    show = 'echo "first=${FIRST_TOKEN:+set} second=${SECOND_TOKEN:+set}"'
    try:
        first = await pool.get("1", SandboxGrants(secrets=["FIRST_TOKEN"]))
        assert (await first.run(show)).stdout.strip() == "first=set second="
        second = await pool.get("1", SandboxGrants(secrets=["SECOND_TOKEN"]))
        assert (await second.run(show)).stdout.strip() == "first= second=set"
        again = await pool.get("1", SandboxGrants(secrets=["SECOND_TOKEN"]))
        assert again is second  # same grants: the warm sandbox is reused
    finally:
        await pool.close()
