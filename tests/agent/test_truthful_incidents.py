"""What an incident shows is current and readable (issue #40, item 5): a skill's steps appear on
the timeline rendered, evidence starts at a line boundary, and the headline follows the latest
occurrence while the timeline keeps the earlier one."""

from __future__ import annotations

import re
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

import pytest

from tests.conftest import GuardHome
from tests.fakes.local_http import serve, stop
from tests.helpers.agent import find, guard_process, incidents, setup_docker_home, show, wait_for

FILLER = "x" * 50
LINE = re.compile(rf"line \d\d {FILLER} end")  # what the container prints, 62 characters


@pytest.mark.docker
def test_steps_are_shown_rendered_and_evidence_starts_at_a_line(
    home: GuardHome, containers: Any
) -> None:
    labels = setup_docker_home(home, skills=["docker-start-exited"])
    chatty = containers.run(
        "chatty",
        f"for i in $(seq 10 49); do echo line $i {FILLER} end; done; sleep 600",
        labels=labels,
    )
    wait_for(lambda: b"line 49" in chatty.logs(), 30, "the container's lines")
    with guard_process(home):
        chatty.kill()  # code 137: the trusted skill docker-start-exited heals it
        done = wait_for(
            lambda: find(home, target=chatty.name, state="resolved"), 60, "the skill to heal it"
        )
    shown = show(home, done["id"])
    steps = [t["message"] for t in shown["timeline"] if t["type"] == "step"]
    assert any(m.startswith(f"docker.start container={chatty.name}: done") for m in steps), steps
    assert not [t for t in shown["timeline"] if "{{" in t["message"]]
    evidence = shown["details"]["evidence"].splitlines()
    assert evidence[0] == "$ docker.logs tail=30"  # then the container's last lines, each whole
    assert evidence[1:] and all(LINE.fullmatch(line) for line in evidence[1:]), evidence[:3]


class Answers(BaseHTTPRequestHandler):
    """Answers every request with ``status[0]``."""

    status: ClassVar[list[int]] = [500]

    def do_GET(self) -> None:
        self.send_response(self.status[0])
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_the_headline_follows_the_latest_occurrence(home: GuardHome) -> None:
    server, url = serve(Answers)
    try:
        home.playbook("shop", [{"id": "shop", "type": "http", "url": f"{url}/", "every": "1h"}])
        Answers.status[0] = 500
        home.cli("run", "--once")
        Answers.status[0] = 502  # the same fault (one fingerprint), saying something else now
        home.cli("run", "--once")
    finally:
        stop(server)
    (inc,) = incidents(home)
    assert inc["count"] == 2 and inc["details"]["status"] == 502
    assert "answered 502" in inc["message"], inc["message"]
    timeline = show(home, inc["id"])["timeline"]
    assert "answered 500" in timeline[0]["message"]  # opened: the first occurrence, kept
    (changed,) = [t for t in timeline if t["type"] == "changed"]
    assert "answered 502" in changed["message"] and changed["data"]["was"]["status"] == 500
    listed = home.cli("incidents", "show", str(inc["id"])).stdout
    assert "answered 502" in listed.split("timeline:")[0]
