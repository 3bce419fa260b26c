"""The self-improving loop on the real Docker engine: ask, learn a verified fix, heal alone."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from guard.memory.semantic import SemanticMemory
from guard.skills.library import load_skill, load_skills
from guard.store.models import Incident
from tests.helpers.agent import (
    REPO,
    find,
    guard_process,
    incidents,
    new_incident,
    past_flap_window,
    setup_docker_home,
    show,
    wait_for,
)


def past(**fields: Any) -> Incident:
    """A past incident as semantic memory sees it (only what it reads)."""
    return new_incident(**fields)


# Resolved incidents that have nothing to do with a container exiting.
UNRELATED = [
    (
        past(
            id=9001,
            source="logfile",
            kind="disk_full",
            target="/var/log/api.log",
            title="disk full on /var/log/api.log",
            message="ERROR write /var/lib/postgresql/data: no space left on device, "
            "/dev/sda1 is 100% full",
        ),
        "pruned old images and rotated logs; /dev/sda1 at 41%",
    ),
    (
        past(
            id=9002,
            source="http",
            kind="tls_certificate_expired",
            target="https://shop.example.com/",
            title="TLS certificate expired on https://shop.example.com/",
            message="certificate verify failed: certificate has expired (notAfter "
            "2026-11-30T00:00:00Z)",
        ),
        "renewed the certificate with certbot and reloaded nginx",
    ),
    (
        past(
            id=9003,
            source="logfile",
            kind="payment_error",
            target="/srv/payments.log",
            title="payment provider error on /srv/payments.log",
            message="ERROR checkout: payment provider returned HTTP 502 Bad Gateway for "
            "charge ch_3PXa91",
        ),
        "the provider's outage ended; replayed the failed charges",
    ),
]

pytestmark = pytest.mark.docker


def test_a_humans_fix_is_verified_learned_committed_and_reused(home, containers):
    labels = setup_docker_home(home)  # no skills at all: nothing matches
    victim = containers.run("victim", "sleep 600", labels=labels)
    with guard_process(home):
        victim.kill()
        first = wait_for(
            lambda: find(home, target=victim.name, state="awaiting_human"),
            60,
            "Guard to ask a human",
        )
        asked = [t for t in show(home, first["id"])["timeline"] if t["type"] == "asked_human"]
        assert asked and "No skill matches" in asked[0]["message"]

        reply = home.cli("reply", str(first["id"]), "--", "docker.restart", victim.name)
        assert "cured incident" in reply.stdout and "saved as skill learned-" in reply.stdout

        done = show(home, first["id"])
        assert done["state"] == "resolved"
        skill_name = done["details"]["learned_skill"]
        commit = done["details"]["skill_commit"]
        skill_dir = home.root / "skills" / skill_name
        learned = load_skill(skill_dir)  # valid agentskills.io frontmatter and sections
        assert learned.spec.origin == "learned" and learned.spec.trust == "trusted"
        assert learned.spec.steps[0].action == "docker.restart"
        assert learned.spec.steps[0].args == {"container": "{{ incident.target }}"}
        log = subprocess.run(
            ["git", "log", "-1", "--format=%H%n%B", "--", skill_name],
            cwd=home.root / "skills",
            capture_output=True,
            text=True,
            check=True,
        )
        assert log.stdout.startswith(commit)
        assert f"incident #{first['id']}" in log.stdout and "Approved-by: cli:" in log.stdout

        # the same fault again (a new incident, not a flap): healed with no question asked
        victim.reload()
        assert victim.status == "running"
        wait_for(lambda: past_flap_window(home, first["id"]), 30, "the flap window to pass")
        victim.kill()
        second = wait_for(
            lambda: next(
                (
                    i
                    for i in incidents(home)
                    if i["id"] != first["id"]
                    and i["target"] == victim.name
                    and i["state"] == "resolved"
                ),
                None,
            ),
            60,
            "the learned skill to heal the second incident",
        )
        timeline = show(home, second["id"])["timeline"]
        assert not [t for t in timeline if t["type"] == "asked_human"]
        assert any(
            skill_name in t["message"]
            for t in timeline
            if t["type"] == "state_changed" and t["to_state"] == "resolved"
        )
        victim.reload()
        assert victim.status == "running"

    # memory: among unrelated resolved incidents, a paraphrase that names no container (and
    # shares no word with the message but synonyms) finds the container exit and its remedy
    memory = SemanticMemory(home.root / "data" / "memory.lance")
    for incident, resolution in UNRELATED:
        memory.remember(incident, resolution=resolution)
    memory.close()
    hits = json.loads(
        home.cli(
            "memory", "search", "the service process died unexpectedly and stopped", "--json"
        ).stdout
    )
    assert {h["incident_id"] for h in hits} >= {9001, 9002, 9003}  # all of them were ranked
    assert hits[0]["target"] == victim.name, hits
    assert hits[0]["incident_id"] in (first["id"], second["id"])
    assert hits[0]["kind"] == "container_exited"
    assert "docker.restart" in hits[0]["resolution"] or skill_name in hits[0]["resolution"]
    assert all(h["score"] < hits[0]["score"] for h in hits if h["incident_id"] >= 9001)


def test_a_fix_that_does_not_cure_saves_nothing_and_says_why(home, containers):
    labels = setup_docker_home(home)
    victim = containers.run("victim", "sleep 600", labels=labels)
    victim.kill()
    home.cli("run", "--once", "--heal")
    inc = wait_for(lambda: find(home, target=victim.name, state="awaiting_human"), 30, "ask")
    proc = home.cli("reply", str(inc["id"]), "--", "echo", "looks fine to me", check=False)
    assert proc.returncode == 1
    assert "did not cure incident" in proc.stdout and "Nothing was saved" in proc.stdout
    assert "exited with code" in proc.stdout  # the reason: the check still fails
    assert load_skills(home.root / "skills") == []
    after = show(home, inc["id"])
    assert after["state"] == "awaiting_human"
    steps = [t for t in after["timeline"] if t["type"] == "step"]
    assert any("run echo" in t["message"] and "done" in t["message"] for t in steps)


def test_every_shipped_skill_passes_the_frontmatter_check():
    skills = load_skills(REPO / "skills")
    assert {s.name for s in skills} >= {
        "docker-start-exited",
        "docker-restart-unhealthy",
        "docker-restart-loop",
    }
    for s in skills:
        assert s.meta.name == s.path.name and len(s.meta.description) <= 1024
