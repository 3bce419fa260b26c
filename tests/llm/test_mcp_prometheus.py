"""The investigation asks a real MCP server a team runs: ``prometheus-mcp-server`` from PyPI
(its own venv, installed by ``scripts/bootstrap``) against a real Prometheus scraping a target
that fails. The scripted model calls the server's query tool through Guard, the answer comes
back fenced, and the proposal names the series the model saw."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.fakes.local_http import serve, stop
from tests.fakes.model import ModelServer, Reply, call
from tests.fakes.prometheus import prometheus
from tests.helpers.agent import wait_for
from tests.llm.test_investigation import make_agent, trajectory

SERVER = REPO / ".venv" / "tools" / "prometheus-mcp" / "bin" / "prometheus-mcp-server"
FAILING = 'shop_checkout_failures_total{service="shop"} 42\n'


def server_binary() -> Path:
    if not SERVER.exists():
        reason = "no prometheus-mcp-server (scripts/bootstrap installs it into .venv/tools)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return SERVER


class Metrics(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = FAILING.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None: ...


@pytest.fixture
def scraped(tmp_path: Path) -> Iterator[str]:
    """A real Prometheus scraping a target whose failures count up; its URL."""
    target, address = serve(Metrics)
    try:
        with prometheus(tmp_path / "prom", address.removeprefix("http://"), {}, "127.0.0.1:9") as p:
            wait_for(
                lambda: p.get("/api/v1/query", query="shop_checkout_failures_total")["data"][
                    "result"
                ],
                what="the first scrape",
            )
            yield p.url
    finally:
        stop(target)


def propose_from_what_was_seen(server: ModelServer) -> Any:
    """The model's second turn: a proposal naming the series its query returned."""

    def answer(n: int) -> Reply:
        results = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"]
        seen = re.findall(r'"__name__":\s*"(\w+)"', "\n".join(m["content"] for m in results))
        return call(
            "propose_remedy",
            fix="docker.restart shop",
            reason=f"series {', '.join(sorted(set(seen)))} is rising",
            confidence=0.7,
        )

    return answer


async def test_the_model_queries_a_real_prometheus_through_its_mcp_server(
    tmp_path: Path, openai_server: ModelServer, scraped: str
) -> None:
    openai_server.script = [call("prometheus__execute_query", query="shop_checkout_failures_total")]
    openai_server.default = propose_from_what_was_seen(openai_server)
    servers = {
        "prometheus": {
            "command": str(server_binary()),
            "env": {"PROMETHEUS_URL": scraped},
            "allow": ["execute_query", "list_metrics"],
            "connect_timeout": 120,
        }
    }
    agent, notifier, inc_id = make_agent(
        tmp_path, {**openai_server.config(), "mcp_servers": servers}
    )
    try:
        await agent.handle(inc_id)
    finally:
        await agent.shutdown()
    offered = {t["function"]["name"] for t in openai_server.requests[0]["tools"]}
    assert {"prometheus__execute_query", "prometheus__list_metrics"} <= offered
    assert "prometheus__get_targets" not in offered  # not in allow: never offered
    answer = next(m["content"] for m in trajectory(agent, inc_id).messages if m["role"] == "tool")
    assert answer.startswith("<untrusted-data id=") and "source=prometheus__execute_query" in answer
    assert '"shop_checkout_failures_total"' in answer and '"42"' in answer
    option = notifier.asked[0].options[0]
    assert option.command == "docker.restart shop"
    proposed = trajectory(agent, inc_id).messages[-2]
    assert "series shop_checkout_failures_total is rising" in json.dumps(proposed)
