"""The HTTP monitor against a real server on 127.0.0.1."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from guard.monitors.http import HttpMonitor
from guard.playbooks.models import HttpMonitorSpec
from tests.fakes.local_http import serve, stop

pytestmark = pytest.mark.unit


class Service:
    """A health endpoint whose status, body and delay the test controls."""

    def __init__(self) -> None:
        self.status, self.body, self.delay = 200, b"ok", 0.0
        self.cookies: list[str | None] = []  # the Cookie header of each request
        svc = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                time.sleep(svc.delay)
                svc.cookies.append(self.headers.get("Cookie"))
                self.send_response(svc.status)
                self.send_header("Set-Cookie", "session=from-an-earlier-check; Path=/")
                self.send_header("Content-Length", str(len(svc.body)))
                self.end_headers()
                self.wfile.write(svc.body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server, base = serve(Handler)
        self.url = f"{base}/healthz"


@pytest.fixture
def service() -> Iterator[Service]:
    svc = Service()
    yield svc
    stop(svc.server)


def monitor(url: str, **kw: Any) -> HttpMonitor:
    return HttpMonitor(
        HttpMonitorSpec.model_validate({"id": "web", "type": "http", "url": url, **kw})
    )


async def one(m: HttpMonitor):
    obs = await m.check({})
    (sig,) = obs.signals
    return sig


async def test_healthy_then_bad_status(service: Service):
    m = monitor(service.url)
    sig = await one(m)
    assert sig.status == "ok" and sig.details["status"] == 200 and "latency_ms" in sig.details
    service.status = 503
    sig = await one(m)
    assert (sig.status, sig.kind, sig.details["status"]) == ("firing", "http_status", 503)
    assert "answered 503 (expected 200)" in sig.message
    await m.close()


async def test_a_check_never_sends_a_cookie_an_earlier_check_was_given(service: Service):
    url = service.url.replace("127.0.0.1", "localhost")  # a client keeps no cookie of an IP
    first, second = monitor(url), monitor(url.replace("healthz", "other"))
    for m in (first, second, first):
        assert (await one(m)).status == "ok"
    await first.close()
    await second.close()
    assert service.cookies == [None, None, None]  # each check as a fresh client sees it


async def test_timeout_body_and_latency(service: Service):
    m = monitor(service.url, timeout="200ms")
    service.delay = 1.0
    assert (await one(m)).kind == "http_timeout"
    await m.close()
    service.delay = 0.3
    m = monitor(service.url, max_latency="100ms")
    assert (await one(m)).kind == "http_slow"
    await m.close()
    service.delay = 0
    m = monitor(service.url, expect_body="^ready$")
    assert (await one(m)).kind == "http_body"
    await m.close()


async def test_unreachable():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    m = monitor(f"http://127.0.0.1:{port}/", timeout="1s")
    sig = await one(m)
    assert sig.kind == "http_unreachable" and sig.status == "firing"
    await m.close()


async def test_for_two_and_auto_resolve_through_guard(home, service: Service):
    from guard.app import Guard

    home.playbook(
        "web",
        [
            {
                "id": "web",
                "type": "http",
                "url": service.url,
                "every": "5s",
                "expect_status": 200,
                "for": 2,
            }
        ],
    )
    service.status = 500

    async def once() -> list[str]:
        g = Guard(home.settings(), home.playbooks_loaded())
        return [e.type for e in await g.run_once()]

    assert await once() == []  # one failure: not yet
    assert await once() == ["opened"]  # the second in a row opens it
    assert await once() == []  # a third adds to the count
    service.status = 200
    assert await once() == ["resolved"]
    from sqlmodel import select

    from guard.store.models import Incident

    with home.database().session() as s:
        inc = s.exec(select(Incident).where(Incident.source == "http")).one()
    assert inc.count == 3 and inc.state == "resolved"
