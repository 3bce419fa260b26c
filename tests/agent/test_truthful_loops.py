"""What an incident shows is current (issue #40, item 5): a real container in a restart-policy
crash loop is one ``container_restarting`` incident with the loop's real exit code, its remedy
is verified only once the container stays up through ``agent.settle``, and a reopened incident
is taken by the agent at once, not by the recovery sweep."""

from __future__ import annotations

import time
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import GuardHome
from tests.helpers import agent as ah

pytestmark = pytest.mark.docker

SETTLE = 3.0
# Exits 1 at start until /data/ok exists (a dependency the entrypoint checks), then stays up.
LOOP = (
    "if [ -f /data/ok ]; then echo up; exec sleep 600; fi; "
    "echo 'cannot start: /data/ok is missing'; exit 1"
)


def _steps(home: GuardHome, incident_id: int) -> list[dict[str, Any]]:
    return [t for t in ah.show(home, incident_id)["timeline"] if t["type"] == "step"]


def _verifies(home: GuardHome, incident_id: int) -> list[dict[str, Any]]:
    return [t for t in _steps(home, incident_id) if t["data"].get("kind") == "verify"]


def test_a_crash_loop_is_one_restarting_incident_healed_only_once_it_stays_up(
    home: GuardHome, containers: Any, tmp_path: Path
) -> None:
    labels = ah.setup_docker_home(
        home, skills=["docker-restart-loop", "docker-start-exited"], agent={"settle": "3s"}
    )
    ah.tune_skill(  # the built-in loop skill, verifying quickly (its own waits are minutes)
        home,
        "docker-restart-loop",
        steps=[
            {"action": "docker.stop", "args": {"container": "{{ incident.target }}"}},
            {"action": "docker.start", "args": {"container": "{{ incident.target }}"}},
            {"verify": {"timeout": "4s", "interval": "500ms"}},
        ],
    )
    data = tmp_path / "data"
    data.mkdir()
    with ah.guard_process(home):
        loop = containers.run(
            "loop",
            LOOP,
            labels=labels,
            restart_policy={"Name": "always"},
            volumes={str(data): {"bind": "/data", "mode": "rw"}},
        )
        inc = ah.wait_for(
            lambda: ah.find(home, target=loop.name, state="awaiting_human"), 60, "a question"
        )
        assert inc["kind"] == "container_restarting", inc
        assert "exit code 1" in inc["message"], inc["message"]
        asked = ah.show(home, inc["id"])["timeline"]
        recalled = next(t for t in asked if t["type"] == "recalled")
        skills = [c["skill"] for c in recalled["data"]["candidates"]]
        assert skills == ["docker-restart-loop"], skills

        # A remedy that does not end the loop (a stop and a start; /data/ok still missing):
        # the container is "running" for a moment between restarts, which is no cure.
        not_cured = home.cli(
            "approve", str(inc["id"]), "--skill", "docker-restart-loop", check=False
        )
        assert "did not cure" in not_cured.stdout, not_cured.stdout
        (failed,) = ah.wait_for(lambda: _verifies(home, inc["id"]), 60, "the first verification")
        assert ": failed" in failed["message"], failed["message"]
        assert ah.find(home, id=inc["id"], state="resolved") is None

        # The dependency is back: the same remedy now ends the loop, and is verified only
        # after the container stayed up (same start, same restart count) for agent.settle.
        (data / "ok").write_text("ok")
        ah.wait_for(
            lambda: ah.find(home, id=inc["id"], state="awaiting_human"), 60, "a second question"
        )
        home.cli("approve", str(inc["id"]), "--skill", "docker-restart-loop")
        ah.wait_for(lambda: ah.find(home, id=inc["id"], state="resolved"), 60, "the cure")
    verify = _verifies(home, inc["id"])[-1]
    assert ": done" in verify["message"] and "stayed up" in verify["message"], verify["message"]
    mine = [i for i in ah.incidents(home) if i["target"] == loop.name]
    assert len(mine) == 1, mine  # one loop, one incident (no second one for its exits)
    done = ah.show(home, inc["id"])
    assert done["kind"] == "container_restarting" and "exit code 1" in done["message"]


def _at(entry: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(entry["at"])


def test_a_reopened_incident_is_taken_at_once(home: GuardHome, containers: Any) -> None:
    labels = ah.setup_docker_home(
        home,
        skills=["docker-start-exited"],
        agent={"settle": "1s"},
        triage={"flap_window": "1h", "flap_threshold": 1},  # flapping from its first reopen
    )
    app = containers.run("app", "sleep 600", labels=labels)
    with ah.guard_process(home):
        for round_ in range(3):  # opened, reopened (flapping), reopened again (still flapping)
            app.kill()
            healed = {"target": app.name, "state": "resolved", "reopen_count": round_}
            ah.wait_for(partial(ah.find, home, **healed), 60, f"heal {round_ + 1}")
            if round_ == 0:  # the first heal remembered starts the memory helper: let it
                # finish (its import is seconds of CPU on a loaded machine), so the reopens
                # below time the agent taking them, not the helper's one start
                table = home.root / "data" / "memory.lance" / "incidents.lance"
                ah.wait_for(table.exists, 60, "the first incident remembered")
                time.sleep(1)
    (inc,) = [i for i in ah.incidents(home) if i["target"] == app.name]
    timeline = ah.show(home, inc["id"])["timeline"]
    reopens = [
        i
        for i, t in enumerate(timeline)
        if t["type"] == "state_changed" and "failed again" in t["message"]
    ]
    assert len(reopens) == 2, [t["message"] for t in timeline]
    for i in reopens:
        taken = next(t for t in timeline[i:] if t["type"] == "recalled")
        waited = (_at(taken) - _at(timeline[i])).total_seconds()
        assert waited < 5, f"the agent took the reopened incident {waited:.1f}s after it reopened"
