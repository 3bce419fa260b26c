"""An incident's warm sandbox lives only as long as the incident needs work (real engine)."""

from __future__ import annotations

import pytest

from tests.agent_helpers import (
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
        inc = wait_for(lambda: find(home, target=victim.name, state="awaiting_human"), 60,
                       "Guard to diagnose in the sandbox and ask a human")
        assert "looking at" in show(home, inc["id"])["details"]["evidence"]
        # kept warm while the incident waits: a human's fix would run in it
        assert len(sandboxes_of(docker_client, inc["id"], proc.pid)) == 1

        victim.start()  # someone fixed it by hand: the check passes, triage resolves it
        done = wait_for(lambda: find(home, id=inc["id"], state="resolved"), 60,
                        "triage to resolve the incident")
        wait_for(lambda: not sandboxes_of(docker_client, inc["id"], proc.pid), 30,
                 "the incident's sandbox to be removed while Guard runs on")
        assert proc.poll() is None
    timeline = show(home, done["id"])["timeline"]
    resolved = [t for t in timeline if t["type"] == "state_changed" and t["to_state"] == "resolved"]
    assert resolved and "check passed again" in resolved[-1]["message"]
    assert not [t for t in timeline if t["type"] == "step"]  # no remedy ran: triage closed it
