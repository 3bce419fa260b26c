"""An incident's warm sandbox lives only as long as the incident needs work (real engine)."""

from __future__ import annotations

import pytest
import yaml

from tests.helpers.agent import (
    find,
    guard_process,
    sandboxes_of,
    setup_docker_home,
    show,
    wait_for,
)

pytestmark = pytest.mark.docker


def test_an_incident_that_triage_resolves_leaves_no_sandbox(home, containers, docker_client):
    labels = setup_docker_home(home, diagnostics=[{"run": "echo looking at {{ incident.target }}"}])
    victim = containers.run("victim", "sleep 600", labels=labels)
    with guard_process(home) as proc:
        victim.kill()
        inc = wait_for(
            lambda: find(home, target=victim.name, state="awaiting_human"),
            60,
            "Guard to diagnose in the sandbox and ask a human",
        )
        assert "looking at" in show(home, inc["id"])["details"]["evidence"]
        # kept warm while the incident waits: a human's fix would run in it
        assert len(sandboxes_of(docker_client, inc["id"], proc.pid)) == 1

        victim.start()  # someone fixed it by hand: the check passes, triage resolves it
        done = wait_for(
            lambda: find(home, id=inc["id"], state="resolved"), 60, "triage to resolve the incident"
        )
        wait_for(
            lambda: not sandboxes_of(docker_client, inc["id"], proc.pid),
            30,
            "the incident's sandbox to be removed while Guard runs on",
        )
        assert proc.poll() is None
    timeline = show(home, done["id"])["timeline"]
    resolved = [t for t in timeline if t["type"] == "state_changed" and t["to_state"] == "resolved"]
    assert resolved and "check passed again" in resolved[-1]["message"]
    assert not [t for t in timeline if t["type"] == "step"]  # no remedy ran: triage closed it


def test_a_granted_secret_never_reaches_what_guard_stores_or_logs(home, containers, monkeypatch):
    secret = "s3cr3t-" + "7d1e0c9b4a" * 2
    monkeypatch.setenv("GUARD_TEST_DB_PASSWORD", secret)
    labels = setup_docker_home(
        home,
        diagnostics=[
            {
                "run": 'echo "connecting with password=$GUARD_TEST_DB_PASSWORD"; '
                'echo "$GUARD_TEST_DB_PASSWORD" >&2'
            }
        ],
    )
    book = home.root / "playbooks" / "containers.yaml"
    spec = yaml.safe_load(book.read_text())
    spec["sandbox"] = {"secrets": ["GUARD_TEST_DB_PASSWORD"]}
    book.write_text(yaml.safe_dump(spec, sort_keys=False))
    victim = containers.run("victim", "sleep 600", labels=labels)
    with guard_process(home) as proc:
        victim.kill()
        inc = wait_for(
            lambda: find(home, target=victim.name, state="awaiting_human"),
            60,
            "Guard to diagnose in the sandbox and ask a human",
        )
        assert proc.poll() is None
    evidence = show(home, inc["id"])["details"]["evidence"]
    assert "password=[REDACTED:GUARD_TEST_DB_PASSWORD]" in evidence  # it did run, redacted
    # nothing Guard wrote anywhere (database, audit chain, memory, its own log) holds the value
    for path in home.root.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
