"""The web console in process: a real store, real tokens and the gate Guard runs with, the Starlette app
served to httpx through ASGI (``client`` sets the caller's address)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from sqlmodel import select

from guard.access.roles import Role
from guard.access.tokens import create_token
from guard.config import Settings
from guard.notify.running_gate import gate_from_settings
from guard.store.db import Database
from guard.store.models import AuditEntry, HumanCommand
from guard.web.console import Console, routes
from guard.web.console.signin import Proxies, StoreTokens
from tests.conftest import GuardHome
from tests.fakes.local_http import KeptAlive
from tests.helpers.agent import stored_incident, wait_for

CSRF = re.compile(r'name="csrf" value="([^"]*)"')
PORT = re.compile(r"web console on http://127\.0\.0\.1:(\d+)/")
LOCAL = {"http_host": "127.0.0.1", "http_port": 0}  # a free port: Guards in parallel never collide


def cli_token(home: GuardHome, name: str, role: str) -> str:
    """``guard access token create``: the token alone on the last line of its output."""
    out = home.cli("access", "token", "create", name, "--role", role).stdout
    return out.strip().splitlines()[-1]


def console_url(log: Path) -> str:
    """The console's address, from ``guard run``'s log."""
    found = wait_for(lambda: PORT.search(log.read_text()), 30, "the console's address")
    return f"http://127.0.0.1:{found.group(1)}"


@dataclass
class FakeRuntime:
    """What the console reads of a running Guard: settings, store, monitors' health."""

    settings: Settings
    db: Database
    monitors_health: list[dict[str, Any]] = field(default_factory=list)

    def health(self) -> list[dict[str, Any]]:
        return self.monitors_health


class Site:
    """A console over ``home``'s store, with an approver ``ann`` and a viewer ``vic``."""

    def __init__(self, home: GuardHome, proxies: Proxies | None = None) -> None:
        settings = home.settings()
        self.db = home.database()
        self.runtime = FakeRuntime(settings, self.db)
        self.tokens = {
            "ann": create_token(self.db, "ann", Role.approver),
            "vic": create_token(self.db, "vic", Role.viewer),
        }
        self.console = Console(
            self.runtime,
            gate_from_settings(settings, self.db),
            StoreTokens(self.db),
            proxies=proxies,
        )
        from starlette.applications import Starlette

        self.app = Starlette(routes=routes(self.console))

    def aclient(
        self, address: str = "127.0.0.1", base: str = "http://guard.test"
    ) -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=self.app, client=(address, 40000))
        return httpx.AsyncClient(transport=transport, base_url=base)

    def bearer(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}

    def incident(self, state: str = "awaiting_human", **fields: Any) -> int:
        with self.db.session() as s:
            return int(stored_incident(s, state, **fields).id)

    def commands(self) -> list[HumanCommand]:
        with self.db.session() as s:
            return list(s.exec(select(HumanCommand)).all())

    def audited(self, action: str) -> list[AuditEntry]:
        with self.db.session() as s:
            return list(s.exec(select(AuditEntry).where(AuditEntry.action == action)).all())


async def sign_in(client: httpx.AsyncClient, token: str) -> httpx.Response:
    """``/login`` as a browser does it: read the form's CSRF token, post the token."""
    form = await client.get("/login")
    csrf = CSRF.search(form.text)
    assert csrf, form.text
    return await client.post("/login", data={"csrf": csrf.group(1), "token": token})


def csrf_of(page: httpx.Response) -> str:
    found = CSRF.search(page.text)
    assert found, page.text[:2000]
    return found.group(1)


HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


def from_address(address: str, base_url: str) -> httpx.Client:
    """A client whose connections leave from ``address`` (any 127.x.y.z is this machine)."""
    transport = httpx.HTTPTransport(local_address=address)
    return httpx.Client(transport=transport, base_url=base_url, timeout=30)


@contextmanager
def reverse_proxy(upstream: str, header: str, users: dict[str, str]) -> Iterator[str]:
    """A real reverse proxy on 127.0.0.1 in front of ``upstream`` (its URL is yielded), as an
    authenticating nginx is: it signs people in by their address (``users``), names them in
    ``header`` (dropping any such header a client sent) and appends the client's address to
    ``X-Forwarded-For``."""
    with httpx.Client(base_url=upstream, timeout=30) as onward:

        class Forward(KeptAlive):
            def forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                peer = self.client_address[0]
                drop = HOP_BY_HOP | {header.lower(), "x-forwarded-for"}
                headers = {k: v for k, v in self.headers.items() if k.lower() not in drop}
                hops = [*(self.headers.get_all("X-Forwarded-For") or []), peer]
                headers["X-Forwarded-For"] = ", ".join(hops)
                if peer in users:
                    headers[header] = users[peer]
                answer = onward.request(self.command, self.path, content=body, headers=headers)
                self.send_response(answer.status_code)
                for name, value in answer.headers.multi_items():
                    if name.lower() not in HOP_BY_HOP | {"content-encoding"}:
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            do_GET = do_POST = forward

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Forward)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()
            server.server_close()
