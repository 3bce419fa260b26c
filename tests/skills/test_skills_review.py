"""Review before trust, end to end (issue 18): a real `guard run` learns a human's fix onto its
own branch of the skills remote, offers it first (never runs it unasked) while it is under
review, heals unasked once a reviewer merges it on the remote, and forgets it once the merge is
reverted there.

Run against a bare repository on disk (file://) and against git's own ``git http-backend``
behind a local HTTP server that demands the token (which must then appear nowhere else).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from guard.config import basic_credentials
from tests.conftest import GuardHome
from tests.fakes.git import GitServer, bare_repo, git, reviewer_clone
from tests.fakes.local_http import serve, stop
from tests.helpers.agent import find, incidents, past_flap_window, running_guard, show, wait_for

TOKEN = "glpat-" + "Rv8k" * 5


class Service:
    """/healthz answers 503 until a POST to one of ``cures`` (any path: None)."""

    def __init__(self) -> None:
        self.healthy = True
        self.cures: set[str] | None = None
        svc = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self, status: int) -> None:
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                self._reply(200 if svc.healthy else 503)

            def do_POST(self) -> None:
                svc.healthy = svc.healthy or svc.cures is None or self.path in svc.cures
                self._reply(200)

            def log_message(self, *args: Any) -> None:
                pass

        self.server, self.base = serve(Handler)


@pytest.fixture
def svc() -> Iterator[Service]:
    service = Service()
    yield service
    stop(service.server)


@pytest.fixture(params=["file", "http"])
def remote(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, str, str]]:
    """(the bare repository, its URL for Guard, the token or "")."""
    root = tmp_path / "srv"
    bare = bare_repo(root)
    if request.param == "file":
        yield bare, f"file://{bare}", ""
        return
    server = GitServer(root, token=TOKEN)
    try:
        yield bare, server.url(), TOKEN
    finally:
        server.close()


def configure(home: GuardHome, svc: Service, url: str, token: str) -> None:
    home.playbook(
        "web", [{"id": "web", "type": "http", "url": f"{svc.base}/healthz", "every": "1s"}]
    )
    skills: dict[str, Any] = {
        "git_remote": url,
        "sync_every": "1s",
        "git_author": "Guard Test <guard@test>",
    }
    if token:
        skills["git_token"] = token
    home.write_config(
        {
            "http_host": "127.0.0.1",
            "http_port": 0,
            "sandbox": {"backend": "local"},
            "triage": {"flap_window": "1s"},
            "agent": {"verify_timeout": "5s", "poll_interval": "200ms"},
            "skills": skills,
        }
    )


def skills_listed(home: GuardHome) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in json.loads(home.cli("skills", "list", "--json").stdout)}


def next_incident(home: GuardHome, svc: Service, after: int, **match: Any) -> dict[str, Any]:
    """Break the service once the last incident's flap window passed; the new incident."""
    wait_for(lambda: past_flap_window(home, after), 30, "the flap window to pass")
    svc.healthy = False
    return wait_for(
        lambda: next(
            (
                i
                for i in incidents(home)
                if i["id"] > after and all(i.get(k) == v for k, v in match.items())
            ),
            None,
        ),
        60,
        f"a new incident {match}",
    )


# two learnings, each settling agent.settle: ~47 s alone, over 120 s beside 3 busy workers
@pytest.mark.timeout(300)
def test_a_learned_skill_is_reviewed_on_the_remote_before_guard_trusts_it(
    home: GuardHome, svc: Service, remote: tuple[Path, str, str], tmp_path: Path
) -> None:
    bare, url, token = remote
    configure(home, svc, url, token)
    svc.healthy = False
    outputs: list[str] = []
    with running_guard(home) as (_, log):
        first = wait_for(
            lambda: find(home, monitor_id="web", state="awaiting_human"),
            40,
            "Guard to ask about the failing check",
        )
        reply = home.cli("reply", str(first["id"]), "--", "http.request", f"url={svc.base}/fix")
        outputs.append(reply.stdout)
        name = show(home, first["id"])["details"]["learned_skill"]
        branch = f"guard/learned/{name}"
        assert f"saved as skill {name}" in reply.stdout
        assert f"under review: {branch}" in reply.stdout

        # On the remote: its own branch, not main.
        assert git("ls-tree", "--name-only", "main", cwd=bare) == "README.md"
        assert f"{name}\n" in git("ls-tree", "--name-only", branch, cwd=bare) + "\n"
        listed = skills_listed(home)[name]
        assert (listed["review"], listed["branch"]) == ("pending", branch)

        # The next occurrence: the human is asked, with the skill first; it does not run.
        second = next_incident(home, svc, first["id"], state="awaiting_human")
        timeline = show(home, second["id"])["timeline"]
        asked = next(t for t in timeline if t["type"] == "asked_human")
        assert asked["data"]["options"][0] == name
        recalled = next(t for t in timeline if t["type"] == "recalled")
        assert (
            f"learned from incident #{first['id']}, under review: {branch}"
            in recalled["data"]["candidates"][0]["reasons"]
        )
        assert not any(t["type"] == "decided" for t in timeline)
        approve = home.cli("approve", str(second["id"]), "--skill", name)
        outputs.append(approve.stdout)
        wait_for(lambda: show(home, second["id"])["state"] == "resolved", 30, "the approval")

        # A reviewer merges it on the remote: from the next sync on, it heals unasked.
        rita = reviewer_clone(bare, tmp_path / "rita")
        git("merge", "--no-ff", "-q", "-m", f"Merge {branch}", f"origin/{branch}", cwd=rita)
        git("push", "-q", "origin", "main", cwd=rita)
        wait_for(
            lambda: skills_listed(home).get(name, {}).get("review") == "merged",
            30,
            "the merge to reach Guard",
        )
        third = next_incident(home, svc, second["id"])
        done = wait_for(
            lambda: (lambda i: i if i["state"] == "resolved" else None)(show(home, third["id"])),
            30,
            "Guard to heal it by itself",
        )
        assert done["details"].get("resolved_by") == name and not done["details"].get("asked")

        # The reviewer reverts the merge: after a sync the skill is gone.
        git("revert", "-m", "1", "--no-edit", "HEAD", cwd=rita)
        git("push", "-q", "origin", "main", cwd=rita)
        wait_for(lambda: name not in skills_listed(home), 30, "the revert to reach Guard")
        fourth = next_incident(home, svc, third["id"], state="awaiting_human")
        asked = next(t for t in show(home, fourth["id"])["timeline"] if t["type"] == "asked_human")
        assert "No skill matches" in asked["message"]
        outputs += [home.cli("skills", "list").stdout, home.cli("incidents", "list").stdout]
    if token:  # the token went to the server only
        config = (home.root / "skills" / ".git" / "config").read_text()
        for secret in (token, basic_credentials(token)):
            assert secret not in config
            assert secret not in log.read_text()
            assert secret not in "\n".join(outputs)
