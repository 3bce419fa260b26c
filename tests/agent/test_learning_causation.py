"""A fix is learned only if it caused the recovery (issue #40, item 4), on a real `guard run`
watching a real log file, driven by `guard reply` as a human would."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from guard.skills.library import load_skills
from tests.conftest import GuardHome
from tests.helpers.agent import find, guard_process, incidents, past_flap_window, show, wait_for

WORDING_A = "ERROR write /data/blob-{n}: No space left on device"
WORDING_B = "WARN disk is full, cannot rotate segment {n} on /data"

# Appends a line of the wording the marker names, every 0.2 s, while the marker exists (a
# service that keeps failing while its disk is full); the marker gone, it stays quiet.
WRITER = """
import pathlib, sys, time
log, marker = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
words = {"A": sys.argv[3], "B": sys.argv[4]}
n = 0
while True:
    try:
        which = marker.read_text().strip()
    except FileNotFoundError:
        which = ""
    if which in words:
        n += 1
        with log.open("a") as f:
            f.write(words[which].format(n=n) + "\\n")
    time.sleep(0.2)
"""


def setup_log_home(home: GuardHome) -> Path:
    """A home watching ``app.log`` with one rule that two wordings of a full disk match."""
    log = home.root / "app.log"
    log.write_text("starting\n")
    rule = {"kind": "disk_full", "pattern": "No space left on device|disk is full"}
    home.log_playbook("app", log, [{**rule, "severity": "critical", "quiet": "2s"}], "500ms")
    (home.root / "skills").mkdir(exist_ok=True)
    home.write_config(
        {
            "sandbox": {"backend": "local", "timeout": "10s"},
            "agent": {"verify_timeout": "20s", "poll_interval": "200ms", "settle": "1s"},
            "triage": {"flap_window": "1s"},
            "skills": {"git_author": "Guard Test <guard@test>"},
        }
    )
    return log


@contextmanager
def disk_filler(log: Path, marker: Path) -> Iterator[None]:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(log), str(marker), WORDING_A, WORDING_B]
    )
    try:
        yield
    finally:
        proc.kill()
        proc.wait(timeout=10)


def skills_listed(home: GuardHome) -> Any:
    return json.loads(home.cli("skills", "list", "--json").stdout)


def asked(home: GuardHome, **match: Any) -> dict[str, Any]:
    return wait_for(
        lambda: find(home, state="awaiting_human", **match), 60, f"Guard to ask about {match}"
    )


def test_a_no_op_fix_after_the_lines_stopped_is_not_learned_and_says_why(home: GuardHome):
    log = setup_log_home(home)
    with guard_process(home):
        with log.open("a") as f:
            f.write(WORDING_A.format(n=1) + "\n" + WORDING_A.format(n=2) + "\n")
        inc = asked(home, kind="disk_full")
        before = skills_listed(home)
        time.sleep(3.5)  # the lines stopped: more than the rule's quiet (2s) ago
        reply = home.cli("reply", str(inc["id"]), "--", "true", check=False)
        out = reply.stdout
        assert "not learned" in out, out
        assert "not present before it" in out and "no matching line" in out, out
        assert "saved as skill" not in out
        assert skills_listed(home) == before == []
        assert load_skills(home.root / "skills") == []
        timeline = show(home, inc["id"])["timeline"]
        noted = [t for t in timeline if t["type"] == "not_learned"]
        assert noted and "ran; not learned" in noted[0]["message"], timeline
        assert "not present before it" in noted[0]["message"]


def test_a_fix_that_stops_the_lines_is_learned_and_heals_the_other_wording(home: GuardHome):
    log = setup_log_home(home)
    marker = home.root / "disk-full"
    marker.write_text("A")
    with guard_process(home), disk_filler(log, marker):
        first = asked(home, kind="disk_full")
        assert "No space left on device" in first["title"] + show(home, first["id"])["message"]
        reply = home.cli("reply", str(first["id"]), "--", f"rm -f {marker}")
        assert "cured incident" in reply.stdout and "saved as skill learned-" in reply.stdout
        assert not marker.exists()
        done = show(home, first["id"])
        assert done["state"] == "resolved"
        name = done["details"]["learned_skill"]
        (skill,) = load_skills(home.root / "skills")
        assert skill.name == name and skill.spec.trust == "trusted"
        (trigger,) = skill.spec.triggers
        assert trigger.rule == "No space left on device|disk is full"
        assert trigger.message is None  # the rule, not one wording

        wait_for(lambda: past_flap_window(home, first["id"]), 30, "the flap window to pass")
        marker.write_text("B")  # the disk fills again; the service says it another way
        second = wait_for(
            lambda: next(
                (
                    i
                    for i in incidents(home)
                    if i["id"] != first["id"]
                    and i["kind"] == "disk_full"
                    and i["state"] == "resolved"
                ),
                None,
            ),
            90,
            "the learned skill to heal the other wording",
        )
        shown = show(home, second["id"])
        assert "disk is full" in shown["message"]
        timeline = shown["timeline"]
        assert not [t for t in timeline if t["type"] == "asked_human"], timeline
        assert any(
            name in t["message"]
            for t in timeline
            if t["type"] == "state_changed" and t["to_state"] == "resolved"
        )
        assert not marker.exists()
