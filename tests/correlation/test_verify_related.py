"""Verification re-runs the root's check and every related signal's: all must pass."""

from __future__ import annotations

import asyncio
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from guard.agent.verify import Verifier
from guard.playbooks.models import HttpMonitorSpec
from guard.skills.model import VerifySpec
from guard.store.correlation import RelatedSignal
from guard.store.db import open_database
from tests.fakes.local_http import serve, stop
from tests.helpers.agent import stored_incident

SPEC = VerifySpec(timeout=1, interval=0.1)


class Health:
    """/healthz: 200 while ``up``, else 503."""

    def __init__(self) -> None:
        self.up = False
        health = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200 if health.up else 503)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server, self.url = serve(Handler)


def test_the_incident_is_verified_only_when_each_related_check_passes(tmp_path: Path):
    db = open_database(f"sqlite:///{tmp_path / 'g.db'}")
    api, web = Health(), Health()
    try:
        api.up = True  # the root's own check passes at once
        specs = {
            "api": HttpMonitorSpec(id="api", type="http", url=f"{api.url}/healthz"),
            "web": HttpMonitorSpec(id="web", type="http", url=f"{web.url}/healthz"),
        }
        with db.session() as s:
            root = stored_incident(s, monitor_id="api", target=f"{api.url}/healthz")
            s.add(
                RelatedSignal(
                    incident_id=root.id,
                    fingerprint="web-fp",
                    check_key="web",
                    monitor_id="web",
                    source="http",
                    target=f"{web.url}/healthz",
                    kind="http_status",
                    severity="critical",
                    count=2,
                )
            )
        verifier = Verifier(db, specs)  # type: ignore[arg-type]
        failed = asyncio.run(verifier.verify(root, SPEC))
        assert not failed.passed
        assert f"related signal http status on {web.url}/healthz (x2) still fails" in failed.reason
        web.up = True
        passed = asyncio.run(verifier.verify(root, SPEC))
        assert passed.passed and "1 related check(s) pass" in passed.reason
        api.up = False  # the root's own check failing fails it, whatever the others say
        assert not asyncio.run(verifier.verify(root, SPEC)).passed
    finally:
        stop(api.server)
        stop(web.server)
        db.dispose()
