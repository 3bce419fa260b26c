"""The agent's orchestration in process (local sandbox backend, no Docker, no subprocess):
the options a human is shown are what a bare approval runs, and a human's answer goes through
the same remediation as a trusted skill."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlmodel import select

from guard.agent import recall
from guard.agent.loop import Agent
from guard.app.compose import compose_agent
from guard.config import Settings
from guard.incidents.commands import queue_command
from guard.notify.base import HumanRequest, IncidentUpdate
from guard.store.db import Database, open_database
from guard.store.models import (
    CommandStatus,
    HumanCommand,
    Incident,
    IncidentTimeline,
    RemediationRun,
)
from tests.helpers.agent import as_cli, stored_incident

pytestmark = pytest.mark.unit


@dataclass
class Recollection:
    incident_id: int
    score: float
    skill: str
    resolution: str = "restarted"


class Memory:
    """Semantic memory that remembers one similar incident, resolved by skill ``b``."""

    def __init__(self) -> None:
        self.remembered: list[int | None] = []

    def warm(self) -> None: ...
    def close(self) -> None: ...

    def remember(self, incident: Any, *, resolution: str, skill: str = "") -> None:
        self.remembered.append(incident.id)

    def search(self, text: str, limit: int = 5) -> list[Recollection]:
        return [Recollection(incident_id=99, score=0.9, skill="b")]


class Notifier:
    def __init__(self) -> None:
        self.asked: list[HumanRequest] = []
        self.updates: list[IncidentUpdate] = []

    async def ask(self, request: HumanRequest) -> None:
        self.asked.append(request)

    async def update(self, update: IncidentUpdate) -> None:
        self.updates.append(update)

    async def flush(self) -> None: ...


def write_skill(folder: Path, name: str, description: str, trust: str = "approval") -> None:
    d = folder / name
    d.mkdir(parents=True)
    sections = "".join(
        f"\n## {h}\n{h}.\n" for h in ("When to use", "Procedure", "Pitfalls", "Verification")
    )
    (d / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n{sections}"
    )
    (d / "skill.yaml").write_text(
        yaml.safe_dump(
            {
                "triggers": [{"source": "http", "kind": "http_status"}],
                "steps": [{"run": "echo ran " + name}],
                "trust": trust,
            }
        )
    )


def setup(tmp_path: Path) -> tuple[Agent, Database, Notifier, int]:
    skills = tmp_path / "skills"
    # ``a`` shares more of the message's words, so the library alone ranks it first...
    write_skill(skills, "a", "HTTP 503 down service unavailable")
    write_skill(skills, "b", "restart the service")  # ...memory boosts ``b`` above it.
    settings = Settings(
        data_dir=tmp_path,
        skills_dir=skills,
        playbooks_dir=tmp_path / "pb",
        sandbox={"backend": "local", "timeout": 10},
        agent={"verify_timeout": "1s"},
    )
    db = open_database(settings.database_url)
    notifier = Notifier()
    agent = compose_agent(settings, db, [], notifier=notifier, memory=Memory())  # type: ignore[arg-type]
    with db.session() as s:
        inc = stored_incident(
            s,
            check_key="web",
            target="http://svc/healthz",
            message="HTTP 503 service unavailable",
        )
        return agent, db, notifier, inc.id


async def test_a_bare_approval_runs_the_first_option_the_human_was_shown(tmp_path: Path) -> None:
    agent, db, notifier, inc_id = setup(tmp_path)
    assert [c.skill.name for c in agent.library.candidates(agent.lifecycle.load(inc_id))] == [
        "a",
        "b",
    ]  # what `guard approve` used to run
    try:
        await agent.handle(inc_id)
        (request,) = notifier.asked
        assert [o.name for o in request.options] == ["b", "a"]
        with db.session() as s:
            inc = s.get(Incident, inc_id)
            assert inc is not None and inc.state == "awaiting_human"
            assert inc.details["options"] == ["b", "a"]
        cmd = queue_command(db, incident_id=inc_id, verb="approve", **as_cli("ann"))
        await agent.process_command(cmd)
        with db.session() as s:
            runs = s.exec(select(RemediationRun)).all()
            assert [r.skill for r in runs] == ["b"]
            assert [r.approved_by for r in runs] == ["cli:ann"]
            # Nothing verifies it (no monitor "web"): the incident goes back to the human.
            assert s.get(Incident, inc_id).state == "awaiting_human"  # type: ignore[union-attr]
            done = s.get(HumanCommand, cmd.id)
            assert done is not None and done.status == CommandStatus.failed
            assert done.outcome == "skill b ran but did not cure the incident"
    finally:
        await agent.shutdown()


async def test_a_deny_escalates_and_a_mute_releases(tmp_path: Path) -> None:
    agent, db, _, inc_id = setup(tmp_path)
    try:
        await agent.handle(inc_id)
        await agent.process_command(
            queue_command(db, incident_id=inc_id, verb="deny", **as_cli("bob"))
        )
        assert agent.lifecycle.load(inc_id).state == "escalated"  # type: ignore[union-attr]
        released: list[int] = []
        agent.lifecycle.on_release(released.append)
        await agent.process_command(
            queue_command(db, incident_id=inc_id, verb="mute", **as_cli("bob"), fix="600")
        )
        assert agent.lifecycle.load(inc_id).state == "muted"  # type: ignore[union-attr]
        assert released == [inc_id]
    finally:
        await agent.shutdown()


async def test_a_trusted_skill_runs_unasked_and_failing_twice_trips_the_breaker(
    tmp_path: Path,
) -> None:
    agent, db, notifier, inc_id = setup(tmp_path)
    write_skill(tmp_path / "skills", "c", "restart the service", trust="trusted")
    agent.library.reload()
    try:
        await agent.handle(inc_id)
        with db.session() as s:
            runs = [r.skill for r in s.exec(select(RemediationRun)).all()]
            kinds = [t.type for t in s.exec(select(IncidentTimeline)).all()]
        # Unverifiable (no monitor): c runs, fails, runs again, fails, and is disabled;
        # then the human is asked, escalated, with c no longer offered.
        assert runs == ["c", "c"]
        assert kinds.count("remediation_failed") == 2 and "skill_disabled" in kinds
        (request,) = notifier.asked
        assert [o.name for o in request.options] == ["b", "a"]
        assert request.question.startswith("skill c is disabled for http://svc/healthz")
        assert agent.lifecycle.load(inc_id).state == "escalated"  # type: ignore[union-attr]
    finally:
        await agent.shutdown()


class StartingMemory(Memory):
    """A memory helper still starting: its search answers once ``ready`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.ready = threading.Event()
        self.answered = threading.Event()

    def search(self, text: str, limit: int = 5) -> list[Recollection]:
        self.ready.wait(10)
        self.answered.set()
        return super().search(text, limit)


async def test_a_trusted_skill_does_not_wait_for_memory_still_starting_a_question_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recall, "ADVICE_WAIT", 0.05)
    agent, _, _, inc_id = setup(tmp_path)
    memory = StartingMemory()
    agent.parts.recaller.memory = memory  # type: ignore[assignment]
    inc = agent.lifecycle.load(inc_id)
    assert inc is not None
    waiting = asyncio.create_task(agent.parts.recaller.recall(inc))  # a, b: a person is asked
    await asyncio.sleep(0.3)  # six times ADVICE_WAIT
    assert not waiting.done()  # a question waits for the advice...
    memory.ready.set()
    asked = await waiting
    assert [s.skill for s in asked.similar] == ["b"] and asked.memory_note == ""
    assert asked.candidates[0].skill.name == "b"  # ...which ranks b first

    memory = StartingMemory()
    agent.parts.recaller.memory = memory  # type: ignore[assignment]
    write_skill(tmp_path / "skills", "c", "restart the service", trust="trusted")
    recalled = await agent.parts.recaller.recall(inc)
    assert recalled.similar == [] and not memory.answered.is_set()  # it did not wait
    assert "semantic memory not ready" in recalled.memory_note
    assert "c" in [c.skill.name for c in recalled.candidates]
    memory.ready.set()  # the search goes on in the background: warm for the next incident
    assert await asyncio.to_thread(memory.answered.wait, 10)
