"""Run a probe as Guard does: parsed from its text by the action registry, with settings."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from guard.actions import ActionContext, ActionRegistry, ActionResult
from guard.config import Settings
from tests.fakes.local_http import serve, stop


def probe_settings(tmp_path: Path, **probes: Any) -> Settings:
    """Settings whose ``probes:`` section is ``probes`` (nothing else configured)."""
    return Settings(data_dir=tmp_path, probes=probes)


async def probe(text: str, settings: Settings) -> ActionResult:
    """``text`` (e.g. ``probe.tcp db:5432``) run as a human's reply names it."""
    action, args = ActionRegistry().parse(text)
    return await action.run(args, ActionContext(settings))


@contextlib.contextmanager
def fixed_site(routes: dict[str, tuple[int, bytes]]) -> Iterator[str]:
    """An HTTP service on 127.0.0.1 answering each path with its (status, body), 503 to any
    other; yields its base URL."""

    class Fixed(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, body = routes.get(self.path, (503, b"missing"))
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server, url = serve(Fixed)
    try:
        yield url
    finally:
        stop(server)
