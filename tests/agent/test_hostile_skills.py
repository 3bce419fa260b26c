"""Learned skills (issue 13, findings 2 and 3): a skill that does not load never stops Guard,
generated names are valid, and a learned skill replays exactly the fix that was verified."""

from __future__ import annotations

import asyncio
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import yaml

from guard.app import skill_invalid_signals
from guard.app.compose import compose_agent
from guard.config import load_settings
from guard.incidents.commands import queue_command
from guard.skills.lesson import message_regex, shell_generalise
from guard.skills.library import SkillLibrary, load_skill
from guard.skills.model import NAME_RE
from guard.skills.writer import SkillWriter
from guard.store.models import HumanCommand, Incident, IncidentState
from tests.conftest import GuardHome
from tests.helpers.agent import as_cli, find, running_guard, stored_incident, wait_for
from tests.helpers.telegram import Service, http_playbook

KIND = "a" * 24
TARGET = "b" * 23 + "-" + "c" * 6  # its slug puts a hyphen where the old suffix went: "--2"


def _incident(**kw: Any) -> SimpleNamespace:
    base = dict(
        id=7,
        source="logfile",
        kind=KIND,
        target=TARGET,
        title="t",
        severity="error",
        message="ERROR  disk\tfull on /dev/sda1 after 35ms",
        monitor_id="m",
        count=1,
        details={},
    )
    return SimpleNamespace(**{**base, **kw})


def test_a_second_learned_fix_gets_a_valid_free_name(tmp_path: Path) -> None:
    lib = SkillLibrary(tmp_path / "skills")
    (tmp_path / "skills").mkdir()
    writer = SkillWriter(
        lib, trust="approval", git_commit=False, git_author="T <t@x>", verify_timeout=5
    )
    first = writer.write(
        _incident(), "echo one", action=None, args={}, approver="cli:a", verdict="ok"
    )
    second = writer.write(  # another fault (another source) whose name would be the same
        _incident(id=8, source="journald"),
        "echo two",
        action=None,
        args={},
        approver="cli:a",
        verdict="ok",
    )
    assert first.name != second.name
    for skill in (first, second):
        assert NAME_RE.match(skill.name) and len(skill.name) <= 64
        load_skill(skill.path)
    assert lib.quarantined == {} and len(lib.skills) == 2
    assert not (tmp_path / "skills" / ".incoming").exists() or not any(
        (tmp_path / "skills" / ".incoming").iterdir()
    )


def _broken_skill(home: GuardHome) -> None:
    folder = home.root / "skills" / "learned-broken--2"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: learned-broken--2\ndescription: x\n---\n")
    (folder / "skill.yaml").write_text("triggers: []\nsteps: []\n")


def test_a_skill_that_does_not_load_is_quarantined_not_fatal(home: GuardHome) -> None:
    _broken_skill(home)
    checked = home.cli("check-config", check=False)
    assert checked.returncode == 2
    assert "skill learned-broken--2 is quarantined" in checked.stdout + checked.stderr
    lib = SkillLibrary(home.root / "skills")
    assert list(lib.quarantined) == ["learned-broken--2"] and lib.skills == []
    (signal,) = skill_invalid_signals(lib)
    assert (signal.source, signal.kind, signal.target) == (
        "guard",
        "skill_invalid",
        "skill:learned-broken--2",
    )
    svc = Service()
    http_playbook(home, svc)
    home.write_config(
        {
            "sandbox": {"backend": "local"},
            "http_host": "127.0.0.1",
            "http_port": 0,
            "agent": {"poll_interval": "200ms"},
        }
    )
    with running_guard(home):  # it starts (it refused to before), and says what is wrong
        inc = wait_for(lambda: find(home, kind="skill_invalid"), 30, "a skill_invalid incident")
    assert inc["target"] == "skill:learned-broken--2"


def test_learned_triggers_keep_whitespace_and_match_the_original() -> None:
    message = "2026-12-02T10:00:00Z ERROR  disk\tfull on /dev/sda1 after 35ms"
    rx = message_regex(message)
    assert ".+?" not in rx
    assert re.search(rx, message)
    assert re.search(rx, "2027-01-01T00:00:00Z ERROR  disk\tfull on /dev/sda2 after 9ms")
    assert not re.search(rx, "2027-01-01T00:00:00Z ERROR  cache\tfull on /dev/sda2 after 9ms")


def test_the_target_is_parametrised_only_as_a_whole_word_the_shell_expands() -> None:
    fix = "curl -fsS http://api:8080/ \"http://api:8080/x\" 'http://api:8080/y' api-v2 myapi api"
    out = shell_generalise(fix, "api")
    assert out == (
        'curl -fsS http://"$GUARD_TARGET":8080/ "http://${GUARD_TARGET}:8080/x" '
        "'http://api:8080/y' api-v2 myapi \"$GUARD_TARGET\""
    )
    ran = subprocess.run(
        ["sh", "-c", f"printf '%s\\n' {out.split(' ', 2)[2]}"],
        env={"GUARD_TARGET": "api", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert ran == [
        "http://api:8080/",
        "http://api:8080/x",
        "http://api:8080/y",
        "api-v2",
        "myapi",
        "api",
    ]  # the same command as the human's for the same target


async def test_a_learned_skill_replays_the_script_that_ran(home: GuardHome) -> None:
    svc = Service()
    http_playbook(home, svc)
    home.write_config(
        {
            "sandbox": {"backend": "local"},
            "agent": {"verify_timeout": "5s"},
            "skills": {"git_commit": False},
        }
    )
    settings = load_settings(home.config)
    db = home.database()
    agent = compose_agent(settings, db, home.playbooks_loaded())
    with db.session() as s:
        inc = stored_incident(
            s,
            IncidentState.awaiting_human,
            check_key="web",
            target=f"{svc.base}/healthz",
            message="HTTP 503",
        )
        inc_id = inc.id
    # A Go template (Jinja used to refuse it) and a quoted argv, as `guard reply` now keeps it.
    fix = (
        f"curl -fsS -X POST {svc.base}/fix >/dev/null && "
        "printf '%s\\n' '{{.State.Status}}' 'two words'"
    )
    cmd = queue_command(db, incident_id=inc_id, verb="reply", **as_cli("ann"), fix=fix)
    try:
        await agent.process_command(cmd)
        with db.session() as s:
            done = s.get(Incident, inc_id)
            assert done is not None and done.state == "resolved", done and done.details
            learned = done.details["learned_skill"]
            assert s.get(HumanCommand, cmd.id).status == "done"  # type: ignore[union-attr]
        run = next(r for r in agent.runner.steps(1) if r.kind == "run")
        assert "{{.State.Status}}" in run.result["output"]["stdout"]
        script = home.root / "skills" / learned / "scripts" / "fix.sh"
        assert script.read_text() == run.result["step"]["stdin"]  # saved = what ran
        assert "set -eu" not in script.read_text()
        spec = yaml.safe_load((script.parent.parent / "skill.yaml").read_text())
        assert spec["triggers"] == [  # the check's fault, not one wording of it
            {"source": "http", "kind": "http_status", "target": done.target}
        ]
        svc.healthy = False  # the fault again: the saved script alone cures it
        replay = await asyncio.to_thread(
            subprocess.run,
            ["sh", str(script)],
            capture_output=True,
            text=True,
            env={"PATH": "/usr/bin:/bin", "GUARD_TARGET": done.target},
        )
        assert replay.returncode == 0 and svc.healthy
        assert replay.stdout == "{{.State.Status}}\ntwo words\n"
    finally:
        await agent.shutdown()
        from tests.fakes.local_http import stop

        stop(svc.server)


def test_guard_reply_keeps_argv_quoting(home: GuardHome) -> None:
    with home.database().session() as s:
        stored_incident(
            s,
            IncidentState.resolved,
            monitor_id="gone",
            target="t",
            kind="k",
            severity="error",
            title="t",
            message="m",
        )
    home.cli("reply", "1", "--", "sh", "-c", "echo a; echo b", check=False)
    with home.database().session() as s:
        from sqlmodel import select

        (cmd,) = s.exec(select(HumanCommand)).all()
    assert cmd.fix == "sh -c 'echo a; echo b'"
