"""``guard deny`` as a user runs it (a subprocess): the answer enters through the gate Guard
runs with, which records its decision with the command, and a gate that refuses the CLI stops
it before anything is queued."""

from __future__ import annotations

import getpass
import os
import subprocess
import sys
import textwrap

from sqlmodel import select

from guard.store.models import AuditEntry, HumanCommand
from tests.conftest import GuardHome
from tests.helpers.agent import stored_incident

REFUSING_CLI = textwrap.dedent(
    """
    import sys
    import guard.notify.running_gate as wiring
    from guard.incidents.gate import Gate, Refused

    class NoShell:  # a policy an operator could put first: answers only from the chat
        def decide(self, actor, verb, incident):
            return Refused("answers come from the chat") if actor.channel == "cli" else None

    built = wiring.gate_from_settings
    wiring.gate_from_settings = lambda s, db=None: Gate([NoShell(), *built(s, db).policies])
    sys.argv = ["guard", *sys.argv[1:]]
    from guard.cli import main
    main()
    """
)


def awaiting(home: GuardHome) -> int:
    with home.database().session() as s:
        return int(stored_incident(s, "awaiting_human").id)


def entries(home: GuardHome, action: str) -> list[AuditEntry]:
    with home.database().session() as s:
        return list(s.exec(select(AuditEntry).where(AuditEntry.action == action)).all())


def test_guard_deny_enters_through_the_gate(home: GuardHome) -> None:
    inc = awaiting(home)
    home.cli("deny", str(inc), "--wait", "60")
    (entry,) = entries(home, "human.deny")
    assert entry.actor == f"cli:{getpass.getuser()}"  # the audit's actor string as before
    assert (
        entry.data["allowed"] == "role admin (trusted channel cli)"
    )  # the gate's decision, recorded
    with home.database().session() as s:
        (cmd,) = s.exec(select(HumanCommand)).all()
    assert (cmd.verb, cmd.channel, cmd.status) == ("deny", "cli", "done")


def test_a_gate_that_refuses_the_cli_stops_guard_deny(home: GuardHome) -> None:
    inc = awaiting(home)
    proc = subprocess.run(
        [sys.executable, "-c", REFUSING_CLI, "deny", str(inc), "--wait", "60"],
        cwd=home.root,
        env={**os.environ, "GUARD_CONFIG": str(home.config)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert "refused: answers come from the chat" in proc.stderr
    (entry,) = entries(home, "human.refused")
    assert entry.actor == f"cli:{getpass.getuser()}" and entry.subject == f"incident:{inc}"
    assert entry.data == {"verb": "deny", "reason": "answers come from the chat", "channel": "cli"}
    assert entries(home, "human.deny") == []
    with home.database().session() as s:
        assert s.exec(select(HumanCommand)).all() == []
