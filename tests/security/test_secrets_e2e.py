"""No fake secret leaves Guard in clear: a real `guard run` with the corpus in a watched log, an
HTTP body, container logs (docker.logs evidence), sandbox output and a human's fix text.

Searched afterwards: every request the local Bot API server received, the CLI's output, Guard's
own log, and every byte under data_dir (the database with its WAL, LanceDB's files), plus the
skills git repository with its objects unpacked.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import GuardHome
from tests.fakes.local_http import serve, stop
from tests.fakes.telegram import TelegramServer
from tests.helpers.agent import find, incidents, running_guard, setup_docker_home, show, wait_for
from tests.helpers.secret_corpus import secrets
from tests.helpers.secret_corpus_heldout import heldout, pieces
from tests.helpers.telegram import ADMIN, CHAT, configure, incident_message

CORPUS = secrets("e2e")


def needles() -> list[str]:
    """What must not appear: each secret (each line of a multi-line one, but its PEM armour)."""
    return [
        piece
        for _, secret, _ in CORPUS
        for piece in secret.splitlines()
        if not piece.startswith("-----")
    ]


def leaked(text: str | bytes) -> list[str]:
    data = text.encode() if isinstance(text, str) else text
    return [n for n in needles() if n.encode() in data]


def corpus_text() -> str:
    return "\n".join(line for _, _, line in CORPUS) + "\n"


class LeakyService:
    """/healthz fails until POST /fix; /fix answers with a body full of secrets."""

    def __init__(self) -> None:
        self.healthy = False
        self.fix_bodies: list[bytes] = []
        svc = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self._reply(200 if svc.healthy else 503, corpus_text().encode())

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                svc.fix_bodies.append(self.rfile.read(length))
                svc.healthy = True
                self._reply(200, corpus_text().encode())

            def log_message(self, *args: Any) -> None:
                pass

        self.server, self.base = serve(Handler)


@pytest.fixture
def leaky() -> Iterator[LeakyService]:
    svc = LeakyService()
    yield svc
    stop(svc.server)


def search_everything(
    home: GuardHome,
    tg: TelegramServer,
    log: Path,
    leaks: Callable[[str | bytes], list[str]] = leaked,
) -> dict[str, list[str]]:
    """Where each needle (``leaks``: those in some data) was found (an empty dict: nowhere)."""
    found: dict[str, list[str]] = {}

    def check(where: str, data: str | bytes) -> None:
        if hits := leaks(data):
            found[where] = hits

    check("telegram requests", json.dumps(tg.calls, ensure_ascii=False))
    check("guard log", log.read_bytes())
    cli = [home.cli("incidents", "list").stdout, home.cli("incidents", "list", "--json").stdout]
    every = incidents(home)  # every incident is in the list; the timelines of a sample (oldest
    for inc in every[::4] + every[-1:]:  # included: it is the one a fix cured)
        cli += [
            home.cli("incidents", "show", str(inc["id"])).stdout,
            home.cli("incidents", "show", str(inc["id"]), "--json").stdout,
        ]
    cli.append(home.cli("report", "daily", "--print").stdout)
    check("cli output", "\n".join(cli))
    for path in (home.root / "data").rglob("*"):
        if path.is_file():
            check(str(path), path.read_bytes())
    skills = home.root / "skills"
    for path in skills.rglob("*"):
        if path.is_file():
            check(str(path), path.read_bytes())
    if (skills / ".git").is_dir():
        objects = subprocess.run(
            ["git", "cat-file", "--batch-all-objects", "--batch"],
            cwd=skills,
            capture_output=True,
            check=True,
        ).stdout
        check("skills git objects", objects)
        check(
            "skills git log",
            subprocess.run(
                ["git", "log", "-p"], cwd=skills, capture_output=True, check=True
            ).stdout,
        )
    return found


# a human's fix now settles (agent.settle) before it is learned: ~56 s alone, over 120 s beside 3 busy workers
@pytest.mark.timeout(300)
def test_secrets_in_logs_http_bodies_sandbox_output_and_a_fix_never_leave(home, tg, leaky):
    assert len(CORPUS) >= 15
    assert leaked(corpus_text()) == needles()  # the search does find what is there
    corpus = home.root / "corpus.txt"
    corpus.write_text(corpus_text())
    log = home.root / "api.log"
    log.write_text("")
    path = home.playbook(
        "web",
        [
            {
                "id": "web",
                "type": "http",
                "url": f"{leaky.base}/healthz",
                "every": "1s",
                "auto_resolve": False,
            },
            {
                "id": "api-log",
                "type": "logfile",
                "path": str(log),
                "every": "1s",
                "rules": [{"kind": "leak", "pattern": "."}],
            },
        ],
    )
    book = path.read_text() + f"diagnostics:\n  - run: cat {shlex.quote(str(corpus))}\n"
    path.write_text(book)
    configure(home, tg, agent={"max_concurrent_incidents": 8})
    with running_guard(home) as (_, guard_log):
        web = wait_for(
            lambda: find(home, monitor_id="web", state="awaiting_human"),
            40,
            "Guard to ask about the web check",
        )
        with open(log, "a") as f:  # every corpus line (and each line of the key) in the log
            f.write(corpus_text())
        wait_for(lambda: len(incidents(home)) >= len(CORPUS), 40, "the log's incidents")
        mid = incident_message(tg, web["id"])["message_id"]
        pw, token = CORPUS[16][1], CORPUS[15][1]
        fix = f'http.request {leaky.base}/fix "body=password={pw} api_key={token}"'
        tg.say(ADMIN, fix, chat_id=CHAT, reply_to=mid)  # the human's fix carries two secrets
        wait_for(lambda: show(home, web["id"])["state"] == "resolved", 60, "the fix to cure")
        done = show(home, web["id"])
        assert done["details"].get("learned_skill"), done["details"]
        wait_for(lambda: (home.root / "data" / "memory.lance").exists(), 60, "memory")
        wait_for(lambda: tg.bot_messages("saved as skill"), 30, "the thread to say it")
        evidence = show(home, web["id"])["details"].get("evidence", "")
        assert "[REDACTED:slack-webhook]" in evidence  # the sandbox did print the corpus
    assert leaky.fix_bodies and b"[REDACTED:password]" in leaky.fix_bodies[0]
    messages = " ".join(m.get("text", "") for m in tg.bot_messages())
    assert "[REDACTED:jwt]" in messages and "[REDACTED:url-password]" in messages
    assert search_everything(home, tg, guard_log) == {}


@pytest.mark.docker
def test_secrets_in_container_logs_never_leave(home, tg, containers):
    quoted = shlex.quote(corpus_text())
    assert leaked(quoted) == needles()
    labels = setup_docker_home(home)  # no diagnostics: the evidence is the container's logs
    config = yaml.safe_load(home.config.read_text())
    configure(
        home,
        tg,
        **{
            k: v
            for k, v in config.items()
            if k not in ("data_dir", "playbooks_dir", "skills_dir", "http_port")
        },
    )
    victim = containers.run("leaky", f"printf '%s' {quoted}; sleep 600", labels=labels)
    with running_guard(home) as (_, guard_log):
        wait_for(lambda: b"AKIA" in victim.logs(), 20, "the container to log the corpus")
        victim.kill()
        inc = wait_for(
            lambda: find(home, target=victim.name, state="awaiting_human"),
            90,
            "Guard to collect evidence and ask",
        )
        evidence = show(home, inc["id"])["details"]["evidence"]
        assert evidence.startswith("$ docker.logs")  # its tail; the whole output is in the step
        assert "[REDACTED:authorization]" in evidence and "[REDACTED:slack-webhook]" in evidence
        incident_message(tg, inc["id"])
    assert search_everything(home, tg, guard_log) == {}


def test_a_private_key_logged_one_line_at_a_time_with_timestamps_never_leaves(home, tg):
    """Each line of the key is its own signal (a catch-all rule), written a line at a time over
    several checks, each with its own timestamp: only the source's memory of the open key can
    tell a body line from any other line."""
    secret, lines = next(
        (s, ls) for _, n, s, ls in heldout("e2e") if n == "rsa line by line with timestamps"
    )
    key = [p.encode() for p in pieces(secret)]

    def in_key(data: str | bytes) -> list[str]:
        raw = data.encode() if isinstance(data, str) else data
        return [p.decode() for p in key if p in raw]

    log = home.root / "app.log"
    log.write_text("")
    home.playbook(
        "app",
        [
            {
                "id": "app-log",
                "type": "logfile",
                "path": str(log),
                "every": "1s",
                "rules": [
                    {"kind": "written", "pattern": "^all written$"},
                    {"kind": "line", "pattern": "."},
                ],
            }
        ],
    )
    configure(home, tg, triage={"max_new_incidents": 1000})  # no storm: a line, an incident
    with running_guard(home) as (_, guard_log):
        for line in lines:  # one line at a time, over several checks
            with open(log, "a") as f:
                f.write(line + "\n")
            time.sleep(0.15)
        with open(log, "a") as f:
            f.write("all written\n")
        wait_for(lambda: find(home, kind="written"), 40, "Guard to read the whole key")
    assert len(in_key(log.read_bytes())) == len(key) > 20  # the search finds what is there
    assert "[REDACTED:private-key]" in home.cli("incidents", "list", "--json").stdout
    assert search_everything(home, tg, guard_log, in_key) == {}
