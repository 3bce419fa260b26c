"""Helpers for the Telegram tests: a Guard home wired to the Bot API server (the ``tg`` fixture
is in tests/conftest.py), a local service with a fix endpoint, and a `guard run` process whose
log the test can read."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from tests.conftest import GuardHome
from tests.fakes.local_http import serve
from tests.fakes.telegram import TelegramServer
from tests.helpers.agent import running_guard, wait_for

TOKEN = "123456789:AAtest-SECRET-token_0123456789abcdef"
CHAT = 1001
ADMIN = 42
STRANGER = 666


class Service:
    """/healthz answers 503 until something POSTs /fix."""

    def __init__(self) -> None:
        self.healthy = False
        self.fixes = 0
        svc = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self, status: int) -> None:
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def do_GET(self) -> None:
                self._reply(200 if svc.healthy else 503)

            def do_POST(self) -> None:
                if self.path == "/fix":
                    svc.healthy = True
                    svc.fixes += 1
                self._reply(200)

            def log_message(self, *args: Any) -> None:
                pass

        self.server, self.base = serve(Handler)


def configure(home: GuardHome, tg: TelegramServer, **extra: Any) -> None:
    config: dict[str, Any] = {
        # /healthz and /metrics on loopback and a free port: Guards in parallel never collide
        "http_host": "127.0.0.1",
        "http_port": 0,
        "telegram": {
            "bot_token": TOKEN,
            "chat_id": CHAT,
            "allowed_user_ids": [ADMIN],
            "api_base_url": tg.url,
            "poll_timeout": "1s",
        },
        "sandbox": {"backend": "local"},
        "agent": {"verify_timeout": "5s", "poll_interval": "200ms"},
        "skills": {"git_author": "Guard Test <guard@test>"},
    }
    for key, value in extra.items():
        config[key] = {**config.get(key, {}), **value} if isinstance(value, dict) else value
    home.write_config(config)


def http_playbook(home: GuardHome, svc: Service, auto_resolve: bool = False) -> None:
    home.playbook(
        "web",
        [
            {
                "id": "web",
                "type": "http",
                "url": f"{svc.base}/healthz",
                "every": "1s",
                "auto_resolve": auto_resolve,
            }
        ],
    )


def write_http_skill(home: GuardHome, svc: Service, name: str = "web-fix") -> None:
    folder = home.root / "skills" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: Calls the service's fix endpoint when its health "
        "check answers an error status.\nlicense: Apache-2.0\n---\n\n"
        f"# {name}\n\n## When to use\n\nThe web check fails.\n\n## Procedure\n\n"
        "1. POST /fix.\n\n## Pitfalls\n\nNone.\n\n## Verification\n\nThe check passes.\n"
    )
    (folder / "skill.yaml").write_text(
        "triggers:\n  - source: http\n    kind: http_status\nsteps:\n"
        f'  - action: http.request\n    args: {{url: "{svc.base}/fix"}}\n'
        "  - verify: {timeout: 5s, interval: 500ms}\n"
        "limits: {max_runs: 3, window: 1h}\ntrust: approval\norigin: builtin\n"
    )


@contextmanager
def guard_run(home: GuardHome) -> Iterator[Path]:
    """`guard run` in the background; yields its log file; SIGTERM afterwards."""
    with running_guard(home) as (_, log):
        yield log


def incident_message(
    tg: TelegramServer, incident_id: int | None = None, within: float = 30
) -> dict[str, Any]:
    """The (first) message with buttons about an incident."""

    def found() -> dict[str, Any] | None:
        for m in tg.bot_messages(f"Incident #{incident_id or ''}"):
            if ("reply_markup" in m or m.get("edit_date")) and "reply_to_message" not in m:
                return m
        return None

    return wait_for(found, within, "the incident message")


def buttons(msg: dict[str, Any]) -> list[tuple[str, str]]:
    rows = msg.get("reply_markup", {}).get("inline_keyboard", [])
    return [(b["text"], b["callback_data"]) for row in rows for b in row]


def answers(tg: TelegramServer) -> list[str]:
    return [str(c["params"].get("text", "")) for c in tg.sent("answerCallbackQuery")]
