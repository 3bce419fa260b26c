"""A service watched the usual three ways, on the real Docker engine: its container, its HTTP
health check, and the log file of the proxy in front of it.

The container serves HTTP on a fixed loopback port (kept across restarts: ``prom_peers.victim``).
The proxy is a thread of the test: it asks the service every half second and, while the
service does not answer (twice in a row: it retries once), logs what an nginx in front of it
would, two different lines per failed request (``upstream ... connection refused``,
``request failed: 502``).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.conftest import GuardHome
from tests.fakes.prometheus import victim

PROXY_EVERY = 0.5


@dataclass
class Shop:
    name: str  # its service
    container: Any
    url: str  # its health check
    log: Path  # its proxy's log (None-like: no log when not watched)


def _proxy(url: str, log: Path, stop: threading.Event) -> None:
    failed = 0
    while not stop.wait(PROXY_EVERY):
        try:
            httpx.get(url, timeout=1)
            failed = 0
        except httpx.HTTPError:
            failed += 1
            if failed < 2:  # it retries once before it gives up on a request
                continue
            stamp = time.strftime("%Y/%m/%d %H:%M:%S")
            with open(log, "a") as f:
                f.write(
                    f"{stamp} [error] upstream {url.split('/')[2]} connect() failed: "
                    "connection refused\n"
                    f"{stamp} [warn] request failed: 502 Bad Gateway\n"
                )


@contextlib.contextmanager
def shop(
    home: GuardHome, client: Any, image: str, name: str, labels: dict[str, str]
) -> Iterator[Shop]:
    """The service ``name``: its container (labelled ``labels``) and its proxy's log."""
    container_name = f"guard-test-{name}-{time.time_ns()}"
    log = home.root / f"{name}-proxy.log"
    log.write_text("")
    with victim(client, image, container_name, labels) as (container, target):
        url = f"http://{target}/metrics"
        stop = threading.Event()
        proxy = threading.Thread(target=_proxy, args=(url, log, stop), daemon=True)
        proxy.start()
        try:
            yield Shop(name, container, url, log)
        finally:
            stop.set()
            proxy.join(timeout=10)


def monitors(s: Shop, labels: dict[str, str], *, log: bool = True) -> list[dict[str, Any]]:
    """The three ways of watching ``s`` (two without ``log``), each naming its service."""
    ((key, value),) = labels.items()
    found: list[dict[str, Any]] = [
        {
            "id": f"{s.name}-container",
            "type": "docker",
            "service": s.name,
            "selector": {"label": f"{key}={value}"},
            "every": "1h",
        },
        {  # three failures in a row (2 s): the container's exit event comes first, even on a
            # loaded machine where `guard run` attaches its events stream late
            "id": f"{s.name}-http",
            "type": "http",
            "service": s.name,
            "url": s.url,
            "every": "1s",
            "timeout": "2s",
            "for": 3,
        },
    ]
    if log:
        found.append(
            {
                "id": f"{s.name}-log",
                "type": "logfile",
                "service": s.name,
                "path": str(s.log),
                "every": "2s",
                "rules": [
                    {"kind": "upstream_refused", "pattern": "connection refused"},
                    {"kind": "bad_gateway", "pattern": r"request failed: 502"},
                ],
            }
        )
    return found


def write_playbook(home: GuardHome, name: str, monitors: list[dict[str, Any]], **top: Any) -> None:
    for old in home.playbooks.glob("*.yaml"):
        old.unlink()  # setup_docker_home's own playbook watches by another label
    book = {"name": name, **top, "monitors": monitors}
    (home.playbooks / f"{name}.yaml").write_text(yaml.safe_dump(book, sort_keys=False))
