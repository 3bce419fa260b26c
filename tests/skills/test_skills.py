"""Skill format, validation, matching, templating and the skill writer (no Docker needed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from guard.agent.templating import incident_context, render, render_args
from guard.domain.exceptions import ConfigError
from guard.skills.library import SkillLibrary, load_skill, load_skills
from guard.skills.writer import SkillWriter

REPO = Path(__file__).resolve().parents[2]


def incident(**kw):
    base = dict(
        id=7,
        source="docker",
        kind="container_exited",
        target="api-1",
        message="container api-1 exited with code 137",
        severity="critical",
        monitor_id="containers",
        count=1,
        details={"exit_code": 137},
        title="container exited on api-1",
    )
    return SimpleNamespace(**{**base, **kw})


def copy_skill(tmp: Path, name: str) -> Path:
    dest = tmp / name
    shutil.copytree(REPO / "skills" / name, dest)
    return dest


def test_matching_ranks_and_explains(tmp_path: Path):
    copy_skill(tmp_path, "docker-start-exited")
    copy_skill(tmp_path, "docker-restart-unhealthy")
    lib = SkillLibrary(tmp_path)
    (c,) = lib.candidates(incident())
    assert c.skill.name == "docker-start-exited"
    assert "trigger: source=docker, kind=container_exited" in c.reasons[0]
    assert lib.candidates(incident(message="container api-1 exited with code 0")) == []
    assert lib.candidates(incident(kind="http_status", source="http")) == []


def test_target_globs_and_disabled_skills(tmp_path: Path):
    folder = copy_skill(tmp_path, "docker-start-exited")
    spec = yaml.safe_load((folder / "skill.yaml").read_text())
    spec["triggers"][0]["target"] = "api-*"
    (folder / "skill.yaml").write_text(yaml.safe_dump(spec))
    lib = SkillLibrary(tmp_path)
    assert lib.candidates(incident(target="api-2", message="container api-2 exited with code 1"))
    assert not lib.candidates(
        incident(target="web-1", message="container web-1 exited with code 1")
    )
    spec["trust"] = "disabled"
    (folder / "skill.yaml").write_text(yaml.safe_dump(spec))
    lib.reload()
    assert lib.candidates(incident()) == []


def test_validation_names_file_and_field(tmp_path: Path):
    folder = copy_skill(tmp_path, "docker-start-exited")
    md = (
        (folder / "SKILL.md").read_text().replace("name: docker-start-exited", "name: Docker_Start")
    )
    md = md.replace("## Pitfalls", "## Gotchas")
    (folder / "SKILL.md").write_text(md)
    spec = yaml.safe_load((folder / "skill.yaml").read_text())
    spec["steps"].append({"wait": "1s", "verify": {}})
    spec["trust"] = "sometimes"
    (folder / "skill.yaml").write_text(yaml.safe_dump(spec))
    with pytest.raises(ConfigError) as exc:
        load_skills(tmp_path)
    text = "\n".join(exc.value.problems)
    assert "docker-start-exited/SKILL.md: name: invalid skill name 'Docker_Start'" in text
    assert "missing section '## Pitfalls'" in text
    assert "skill.yaml: steps[3]: a step needs exactly one of run, action, wait, verify" in text
    assert "skill.yaml: trust:" in text


def test_frontmatter_allows_only_spec_keys(tmp_path: Path):
    folder = copy_skill(tmp_path, "docker-start-exited")
    md = (folder / "SKILL.md").read_text().replace("license:", "author: me\nlicense:")
    (folder / "SKILL.md").write_text(md)
    with pytest.raises(ConfigError, match="author: unknown field"):
        load_skill(folder)


def test_run_templates_are_shell_quoted():
    ctx = incident_context(incident(message="boom'; rm -rf / #"))
    assert (
        render("echo {{ incident.message }}", ctx, shell=True) == "echo 'boom'\"'\"'; rm -rf / #'"
    )
    assert render_args({"container": "{{ incident.target }}", "n": 3}, ctx) == {
        "container": "api-1",
        "n": 3,
    }


def test_writer_commits_and_dedups(tmp_path: Path):
    skills = tmp_path / "skills"
    skills.mkdir()
    lib = SkillLibrary(skills)
    writer = SkillWriter(
        lib, trust="approval", git_commit=True, git_author="T <t@x>", verify_timeout=30
    )
    inc = incident()
    first = writer.write(
        inc,
        "docker.restart api-1",
        action="docker.restart",
        args={"container": "api-1"},
        approver="cli:alice",
        verdict="running",
    )
    assert first.commit and not first.existed
    skill = load_skill(first.path)
    assert skill.spec.trust == "approval" and skill.spec.learned_from["approver"] == "cli:alice"
    msg = subprocess.run(
        ["git", "log", "-1", "--format=%B"], cwd=skills, capture_output=True, text=True, check=True
    ).stdout
    assert "incident #7" in msg and "Approved-by: cli:alice" in msg
    again = writer.write(
        incident(id=8),
        "docker.restart api-1",
        action="docker.restart",
        args={"container": "api-1"},
        approver="cli:bob",
        verdict="running",
    )
    assert again.existed and again.name == first.name and again.commit is None
    shell = writer.write(
        inc, "redis-cli -h cache FLUSHALL", action=None, args={}, approver="cli:alice", verdict="ok"
    )
    script = (shell.path / "scripts" / "fix.sh").read_text()
    assert "redis-cli -h cache FLUSHALL" in script
    assert load_skill(shell.path).spec.steps[0].run == "scripts/fix.sh"


def test_a_skill_written_but_not_committed_is_committed_when_learned_again(tmp_path: Path):
    """Regression (bench.crash, learning.files_written): Guard died between writing a learned
    skill and committing it; the retry found it "already known" and never committed it."""
    skills = tmp_path / "skills"
    skills.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=skills, check=True)
    kwargs: dict[str, Any] = {"trust": "approval", "git_author": "T <t@x>", "verify_timeout": 30}
    fix: dict[str, Any] = {
        "action": "docker.restart",
        "args": {"container": "api-1"},
        "approver": "cli:alice",
        "verdict": "running",
    }
    crashed = SkillWriter(SkillLibrary(skills), git_commit=False, **kwargs)  # the files only
    left = crashed.write(incident(), "docker.restart api-1", **fix)
    assert left.commit is None

    writer = SkillWriter(SkillLibrary(skills), git_commit=True, **kwargs)
    again = writer.write(incident(), "docker.restart api-1", **fix)
    assert again.name == left.name and again.commit and not again.existed
    status = subprocess.run(
        ["git", "status", "--porcelain", "--ignored"], cwd=skills, capture_output=True, text=True
    ).stdout
    assert status == ""
    once_more = writer.write(incident(id=8), "docker.restart api-1", **fix)
    assert once_more.existed and once_more.commit is None


def test_a_learned_trigger_is_the_log_rule_not_one_wording(tmp_path: Path):
    rule = "No space left on device|disk is full"
    first = incident(
        source="logfile",
        kind="disk_full",
        target="/var/log/app.log",
        message="ERROR write /data/blob-7: No space left on device",
        details={"rule": rule},
    )
    writer = SkillWriter(
        SkillLibrary(tmp_path),
        trust="trusted",
        git_commit=False,
        git_author="T <t@x>",
        verify_timeout=30,
    )
    learned = writer.write(
        first, "rm -f /data/fill", action=None, args={}, approver="cli:ann", verdict="quiet"
    )
    (trigger,) = load_skill(learned.path).spec.triggers
    assert trigger.rule == rule and trigger.message is None
    other = incident(**{**vars(first), "message": "WARN disk is full, cannot rotate segment 3"})
    assert trigger.match(other) is not None  # another wording of the same rule
    assert trigger.match(incident(**{**vars(first), "details": {"rule": "ERROR"}})) is None
    old = SkillLibrary(tmp_path)  # a skill learned before (a message regex) still loads
    spec = yaml.safe_load((learned.path / "skill.yaml").read_text())
    spec["triggers"] = [{"source": "logfile", "kind": "disk_full", "message": "^ERROR write"}]
    (learned.path / "skill.yaml").write_text(yaml.safe_dump(spec))
    old.reload()
    assert [c.skill.name for c in old.candidates(first)] == [learned.name]
    assert old.candidates(other) == []
