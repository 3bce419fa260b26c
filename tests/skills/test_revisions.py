"""Revisions, not duplicates: a human's fix for a fault an existing skill matched (it failed, or
it was not trusted), or a lesson whose triggers equal a skill's, becomes the next revision of
that skill (the same name, the old steps in git history, the change as a diff), starting at
approval with fresh counts (no Docker: a real git repository and a real SQLite store)."""

from __future__ import annotations

import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from sqlmodel import select

from guard.agent.limits import blocked
from guard.config.skills import SkillsSettings
from guard.domain.records import utcnow
from guard.skills.ladder import after_verdict, describe
from guard.skills.library import SkillLibrary, load_skill, parse_skill_md
from guard.skills.revisions import close_steps
from guard.skills.writer import SkillWriter
from guard.store.db import open_database
from guard.store.ladder import DEMOTED, PROPOSED, LadderStep, open_steps
from guard.store.models import AuditEntry, RemediationRun, RunOrigin, RunStatus, SkillBlock
from tests.skills.test_outcomes import incident as stored
from tests.skills.test_skills import incident

pytestmark = pytest.mark.unit


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout


def writer_in(tmp_path: Path) -> SkillWriter:
    skills = tmp_path / "skills"
    skills.mkdir(exist_ok=True)
    return SkillWriter(
        SkillLibrary(skills),
        trust="trusted",
        git_commit=True,
        git_author="T <t@x>",
        verify_timeout=30,
    )


def restart(writer: SkillWriter, **kw):
    return writer.write(
        incident(**kw),
        "docker.restart api-1",
        action="docker.restart",
        args={"container": "api-1"},
        approver="cli:alice",
        verdict="running",
    )


def compose(writer: SkillWriter):
    """Incident #9's fix, a shell command: a new lesson for the same fault."""
    return writer.write(
        incident(id=9),
        "docker compose up -d api-1",
        action=None,
        args={},
        approver="cli:bob",
        verdict="running",
    )


def test_a_second_fix_for_the_same_fault_is_revision_2_of_the_same_skill(tmp_path: Path):
    writer = writer_in(tmp_path)
    first = restart(writer)
    assert load_skill(first.path).spec.revision == 1
    second = compose(writer)
    assert second.name == first.name and second.revision == 2 and not second.existed
    assert sorted(
        p.name for p in writer.library.folder.iterdir() if not p.name.startswith(".")
    ) == [first.name]
    spec = load_skill(second.path).spec
    assert spec.revision == 2 and spec.trust == "approval"  # new steps start at approval
    assert spec.steps[0].run == "scripts/fix.sh" and spec.learned_from["incident"] == 9
    front, _ = parse_skill_md((second.path / "SKILL.md").read_text(), "SKILL.md")
    assert front["metadata"]["revision"] == "2"
    assert not (second.path / "scripts" / ".keep").exists()
    # the old steps stay in git history; the commit shows the change as a diff
    old = yaml.safe_load(git(writer.library.folder, "show", f"HEAD~1:{first.name}/skill.yaml"))
    assert old["steps"][0]["action"] == "docker.restart"
    message = git(writer.library.folder, "log", "-1", "--format=%B")
    assert message.startswith(f"guard: revise skill {first.name} (revision 2) from incident #9")
    assert "-- action: docker.restart" in message and "+- run: scripts/fix.sh" in message
    assert "-- action: docker.restart" in second.diff


def test_a_fix_for_a_fault_a_skill_matched_revises_that_skill_keeping_its_triggers(
    tmp_path: Path,
):
    writer = writer_in(tmp_path)
    folder = writer.library.folder / "api-restart"
    learned = restart(writer)  # a skill for api-1 alone...
    (folder).mkdir()
    spec = yaml.safe_load((learned.path / "skill.yaml").read_text())
    spec.update(triggers=[{"source": "docker", "kind": "container_exited", "target": "api-*"}])
    spec.pop("learned_from")
    spec["origin"] = "manual"
    (folder / "skill.yaml").write_text(yaml.safe_dump(spec))
    md = (
        (learned.path / "SKILL.md")
        .read_text()
        .replace(f"name: {learned.name}", "name: api-restart")
    )
    (folder / "SKILL.md").write_text(md.replace(f"# {learned.name}", "# api-restart"))
    git(writer.library.folder, "add", ".")
    git(writer.library.folder, "-c", "user.name=T", "-c", "user.email=t@x", "commit", "-qm", "x")
    writer.library.reload()
    revised = start_fix(
        writer, 12, "api-7"
    )  # ...api-restart ran on api-7 and failed; the human's fix cured it
    assert (revised.name, revised.revision) == ("api-restart", 2)
    got = load_skill(folder).spec
    assert [t.target for t in got.triggers] == ["api-*"]  # the skill's fault, as it was
    assert got.steps[0].action == "docker.start" and got.origin == "manual"
    again = start_fix(writer, 13, "api-8")  # the same fix once more: nothing new, no revision 3
    assert again.existed and load_skill(folder).spec.revision == 2


def start_fix(writer: SkillWriter, incident_id: int, target: str):
    """A human's ``docker.start TARGET`` after api-restart ran on it (and failed)."""
    return writer.write(
        incident(id=incident_id, target=target),
        f"docker.start {target}",
        action="docker.start",
        args={"container": target},
        approver="cli:bob",
        verdict="running",
        revises=["api-restart"],
    )


def runs(db, name: str, *statuses: RunStatus, at) -> None:
    with db.session() as s:
        for n, status in enumerate(statuses):
            s.add(
                RemediationRun(
                    incident_id=stored(db),
                    skill=name,
                    target="api",
                    origin=RunOrigin.skill,
                    status=status,
                    started_at=at + timedelta(seconds=n),
                    finished_at=at + timedelta(seconds=n, milliseconds=500),
                )
            )


def test_a_revision_starts_with_fresh_counts_and_leaves_the_old_ladder_steps(tmp_path: Path):
    db = open_database(f"sqlite:///{tmp_path / 'guard.db'}")
    writer = writer_in(tmp_path)
    first = restart(writer)
    before = utcnow() - timedelta(minutes=5)
    runs(db, first.name, RunStatus.verified, RunStatus.failed, RunStatus.failed, at=before)
    with db.session() as s:
        s.add(LadderStep(skill=first.name, step=DEMOTED, reason="2 failed", at=before))
        s.add(LadderStep(skill=first.name, step=PROPOSED, reason="3 verified", at=before))
        s.add(SkillBlock(skill=first.name, target="api", reason="2 failed runs in a row"))
    second = compose(writer)
    with db.session() as s:
        closed = close_steps(s, second.name, second.revision)
    assert closed == 3  # the demotion, the proposal and the breaker on api
    settings = SkillsSettings()
    skill = writer.library.get(first.name)
    assert skill is not None
    with db.session() as s:
        assert open_steps(s) == [] and blocked(s, first.name, "api") is None
        out, standing = describe(s, [skill], settings)[skill.name]
        audit = [r.action for r in s.exec(select(AuditEntry)).all()]
    assert (out.runs, out.failed, out.consecutive_failures) == (0, 0, 0)  # fresh
    assert standing.trust == "approval" and standing.demoted is None
    assert "skill.revised" in audit
    # the new revision's own verdicts count from here: three verified runs propose it again
    runs(db, first.name, RunStatus.verified, RunStatus.verified, RunStatus.verified, at=utcnow())
    with db.session() as s:
        last = s.exec(select(RemediationRun)).all()[-1]
        step = after_verdict(s, last, skill, settings)
    assert step is not None and step.step == PROPOSED
