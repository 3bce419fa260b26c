"""The local protocol servers that keep connections alive (HTTP/1.1: Telegram, PagerDuty, the
Kubernetes API server) answer each request on a kept-alive connection at once, as the real ones
do. A handler that writes the headers and the body in two sends, with Nagle's algorithm on,
holds the body until the client acknowledges the headers, and a client on a kept-alive
connection delays that acknowledgement by ~40 ms: every request took 45 ms, and a test making
thousands of them (the hostile fuzz: 15,000 answerCallbackQuery calls) waited minutes."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from tests.fakes.kube import KubeServer
from tests.fakes.pagerduty import PagerDutyServer
from tests.fakes.telegram import TelegramServer
from tests.helpers.telegram import TOKEN

pytestmark = pytest.mark.unit

EVENT = {
    "routing_key": "r" * 32,
    "event_action": "trigger",
    "payload": {"summary": "disk full", "source": "db-1", "severity": "critical"},
}


def _telegram() -> Iterator[Callable[[httpx.Client], httpx.Response]]:
    server = TelegramServer(TOKEN).start()
    yield lambda c: c.post(f"{server.url}/bot{TOKEN}/getMe")
    server.stop()


def _pagerduty() -> Iterator[Callable[[httpx.Client], httpx.Response]]:
    server = PagerDutyServer().start()
    yield lambda c: c.post(server.url, json=EVENT)
    server.stop()


def _kube() -> Iterator[Callable[[httpx.Client], httpx.Response]]:
    server = KubeServer().start()
    leases = "/apis/coordination.k8s.io/v1/namespaces/guard/leases"
    headers = {"Authorization": "Bearer kube-test-token"}
    yield lambda c: c.get(f"{server.url}{leases}", headers=headers)
    server.stop()


@pytest.mark.parametrize("serve", [_telegram, _pagerduty, _kube], ids=["telegram", "pd", "kube"])
def test_a_kept_alive_connection_gets_each_answer_at_once(
    serve: Callable[[], Iterator[Callable[[httpx.Client], httpx.Response]]],
) -> None:
    served = serve()
    request = next(served)
    took: list[float] = []
    ports: set[int] = set()
    with httpx.Client(timeout=10) as client:
        for _ in range(25):
            started = time.perf_counter()
            answer = request(client)
            took.append(time.perf_counter() - started)
            assert answer.status_code < 500, answer.text
            stream = answer.extensions["network_stream"]
            ports.add(stream.get_extra_info("client_addr")[1])
    next(served, None)
    assert len(ports) == 1  # one connection, kept alive
    median = statistics.median(took[1:])
    assert median < 0.02, f"median answer took {median * 1000:.0f} ms"
