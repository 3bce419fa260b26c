"""A real Prometheus and a real Alertmanager for tests (Debian's ``prometheus`` and
``prometheus-alertmanager``), each on a free 127.0.0.1 port with its own temp folder.

Prometheus scrapes the ``victim`` job every second and fires ``VictimDown`` as soon as a scrape
fails (``for: 0s``); Alertmanager routes every alert to one webhook receiver (Guard's hook) with
a bearer token, waiting ``group_wait: 1s``. The rule and Alertmanager's route and receiver are
read from docs/ALERTMANAGER.md (``doc_block``), so the docs are what the tests run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from guard.domain.durations import parse_duration
from tests.conftest import GuardHome
from tests.helpers.agent import free_port, wait_for

RULE = "VictimDown"


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} needed: apt-get install prometheus prometheus-alertmanager")
        pytest.skip(f"no {name} (apt-get install prometheus prometheus-alertmanager)")
    return found


DOC = Path(__file__).resolve().parents[2] / "docs" / "ALERTMANAGER.md"


def doc_block(name: str) -> Any:
    """The YAML block after ``<!-- test: NAME -->`` in docs/ALERTMANAGER.md, parsed."""
    text = DOC.read_text()
    marker = f"<!-- test: {name} -->\n```yaml\n"
    start = text.index(marker) + len(marker)
    return yaml.safe_load(text[start : text.index("```", start)])


def group_wait() -> float:
    """Alertmanager's ``group_wait`` in the docs' route (seconds)."""
    return parse_duration(doc_block("alertmanager")["route"]["group_wait"])


def alertmanager_config(
    hook_url: str, token_file: Path, send_resolved: bool = True
) -> dict[str, Any]:
    """The docs' Alertmanager configuration, pointed at ``hook_url`` and ``token_file``
    (``send_resolved=False``: Guard hears only of firing alerts)."""
    config: dict[str, Any] = doc_block("alertmanager")
    webhook = config["receivers"][0]["webhook_configs"][0]
    webhook["url"] = hook_url
    webhook["send_resolved"] = send_resolved
    webhook["http_config"]["authorization"]["credentials_file"] = str(token_file)
    return config


def prometheus_config(target: str, labels: dict[str, str], alertmanager: str) -> dict[str, Any]:
    """Prometheus's configuration: scrape ``target`` as job ``victim``, alert to ``alertmanager``."""
    return {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "900ms"},
        "rule_files": ["rules.yml"],
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [alertmanager]}]}]},
        "scrape_configs": [
            {"job_name": "victim", "static_configs": [{"targets": [target], "labels": labels}]}
        ],
    }


@dataclass
class Peer:
    """One running server: its process, base URL and log file."""

    proc: subprocess.Popen[bytes]
    url: str
    log: Path

    def get(self, path: str, **params: Any) -> Any:
        response = httpx.get(self.url + path, params=params, timeout=10)
        response.raise_for_status()
        return response.json()

    def metric(self, name: str, **labels: str) -> float:
        """The sum of series ``name`` with ``labels`` on the server's own /metrics."""
        total = 0.0
        for line in httpx.get(self.url + "/metrics", timeout=10).text.splitlines():
            if not line.startswith(name + "{") and not line.startswith(name + " "):
                continue
            if all(f'{k}="{v}"' in line for k, v in labels.items()):
                total += float(line.split()[-1])
        return total


@contextlib.contextmanager
def _serve(args: list[str], folder: Path, port: int, what: str) -> Iterator[Peer]:
    log = folder / f"{what}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, cwd=folder, stdout=out, stderr=subprocess.STDOUT)
    peer = Peer(proc, f"http://127.0.0.1:{port}", log)
    try:
        _wait_ready(peer, what)
        yield peer
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _wait_ready(peer: Peer, what: str, within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if peer.proc.poll() is not None:
            raise AssertionError(f"{what} exited:\n{peer.log.read_text()[-3000:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(peer.url + "/-/ready", timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    raise AssertionError(f"{what} not ready:\n{peer.log.read_text()[-3000:]}")


@contextlib.contextmanager
def alertmanager(
    folder: Path, hook_url: str, token: str, *, send_resolved: bool = True
) -> Iterator[Peer]:
    """Alertmanager routing every alert to ``hook_url`` with ``token``; no cluster gossip."""
    folder.mkdir(parents=True, exist_ok=True)
    token_file = folder / "guard-token"
    token_file.write_text(token)
    config = folder / "alertmanager.yml"
    routed = alertmanager_config(hook_url, token_file, send_resolved)
    config.write_text(yaml.safe_dump(routed, sort_keys=False))
    port = free_port()
    args = [
        _binary("prometheus-alertmanager"),
        f"--config.file={config}",
        f"--storage.path={folder / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--cluster.listen-address=",
        "--log.level=debug",
    ]
    with _serve(args, folder, port, "alertmanager") as peer:
        yield peer


@contextlib.contextmanager
def prometheus(
    folder: Path, target: str, labels: dict[str, str], alertmanager_url: str
) -> Iterator[Peer]:
    """Prometheus scraping ``target`` every second and alerting ``alertmanager_url``."""
    folder.mkdir(parents=True, exist_ok=True)
    am = alertmanager_url.removeprefix("http://")
    config = folder / "prometheus.yml"
    config.write_text(yaml.safe_dump(prometheus_config(target, labels, am), sort_keys=False))
    (folder / "rules.yml").write_text(
        yaml.safe_dump(doc_block("prometheus-rules"), sort_keys=False)
    )
    port = free_port()
    args = [
        _binary("prometheus"),
        f"--config.file={config}",
        f"--storage.tsdb.path={folder / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    with _serve(args, folder, port, "prometheus") as peer:
        yield peer


def active_alerts(am: Peer, alertname: str = RULE) -> list[dict[str, Any]]:
    """The alerts Alertmanager holds as active for ``alertname`` (its API v2)."""
    alerts: list[dict[str, Any]] = am.get(
        "/api/v2/alerts", active="true", filter=f'alertname="{alertname}"'
    )
    return [a for a in alerts if a["status"]["state"] == "active"]


def failed(am: Peer) -> float:
    """Webhook notifications that failed (each retry counts)."""
    return am.metric("alertmanager_notifications_failed_total", integration="webhook")


def delivered(am: Peer) -> float:
    """Webhook notifications Alertmanager delivered (sent minus failed)."""
    return am.metric("alertmanager_notifications_total", integration="webhook") - failed(am)


VICTIM = "mkdir -p /tmp/www && echo 'victim_up 1' > /tmp/www/metrics && exec httpd -f -p 8080 -h /tmp/www"


@contextlib.contextmanager
def victim(client: Any, image: str, name: str, labels: dict[str, str]) -> Iterator[tuple[Any, str]]:
    """A container serving /metrics on a fixed 127.0.0.1 port (kept across restarts), for
    Prometheus to scrape: (the container, its ``host:port``). Removed afterwards."""
    port = free_port()
    container = client.containers.run(
        image,
        ["sh", "-c", VICTIM],
        name=name,
        detach=True,
        labels={"guard.test": "1", **labels},
        ports={"8080/tcp": ("127.0.0.1", port)},
    )
    try:
        target = f"127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://{target}/metrics", timeout=2).status_code == 200:
                    break
            time.sleep(0.2)
        yield container, target
    finally:
        with contextlib.suppress(Exception):
            container.remove(force=True)


def serving(home: GuardHome) -> None:
    """Wait until ``guard run`` serves HTTP on its configured port."""
    port = yaml.safe_load(home.config.read_text())["http_port"]

    def answers() -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code > 0
        except httpx.HTTPError:
            return False

    wait_for(answers, 60, "guard to serve HTTP")


def scraped_up(prom: Peer) -> bool:
    """Whether Prometheus scraped the ``victim`` job up."""
    found = prom.get("/api/v1/query", query='up{job="victim"}')["data"]["result"]
    return bool(found) and found[0]["value"][1] == "1"


def fire(home: GuardHome, prom: Peer, am: Peer, box: Any) -> dict[str, Any]:
    """Once Guard serves and Prometheus scrapes ``box`` up, stop it; the alert when it fires."""
    serving(home)
    wait_for(lambda: scraped_up(prom), 60, "Prometheus to scrape the target")
    box.stop(timeout=1)
    found: list[dict[str, Any]] = wait_for(lambda: active_alerts(am), 60, "the alert")
    return found[0]
