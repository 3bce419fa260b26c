"""A real stack on the real Docker engine: nginx -> an app -> PostgreSQL and Redis, four
containers of one offline-built image (``tests.flows.image``) on a bridge network named after
the test process, each labelled for Guard; nginx is published on a free 127.0.0.1 port.

``Engine`` records what the engine says happened to them (``start``, ``die``, ``oom``, with
their exit codes) so a test counts restarts as a user would, from the engine's events.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.flows.app import NGINX, SOURCE
from tests.helpers.agent import free_port, wait_for

PG_BIN = "/usr/lib/postgresql/15/bin"
PG_START = (
    f"export PATH={PG_BIN}:$PATH; initdb -D /tmp/pg -U postgres --auth=trust >/dev/null && "
    "echo 'host all all 0.0.0.0/0 trust' >> /tmp/pg/pg_hba.conf && "
    "exec postgres -D /tmp/pg -c listen_addresses='*' -c max_connections=6 "
    "-c superuser_reserved_connections=0 -c unix_socket_directories=/tmp -c fsync=off"
)
REDIS_START = [
    "redis-server",
    "--protected-mode",
    "no",
    "--dir",
    "/data",
    "--save",
    "1 1",
    "--appendonly",
    "yes",
    "--stop-writes-on-bgsave-error",
    "no",  # the writes go on, so the AOF's own error is logged too (a second wording)
]
SERVICES = ("pg", "redis", "app", "web")


@dataclass
class Stack:
    """The four containers (by service), the network, the app's log and the public URL."""

    prefix: str
    network: Any
    containers: dict[str, Any]
    app_log: Path
    url: str  # nginx's /health, on 127.0.0.1
    labels: dict[str, dict[str, str]]  # per service: the label its docker monitor selects

    def name(self, service: str) -> str:
        return str(self.containers[service].name)

    def exec(self, service: str, *cmd: str, detach: bool = False, user: str = "") -> str:
        """Run ``cmd`` in a service's container (as its own user unless ``user``)."""
        out = self.containers[service].exec_run(list(cmd), detach=detach, user=user)
        return "" if detach else out.output.decode(errors="replace")

    def inspect(self, service: str) -> dict[str, Any]:
        c = self.containers[service]
        c.reload()
        return dict(c.attrs["State"], RestartCount=c.attrs.get("RestartCount", 0))

    def healthy(self) -> bool:
        with contextlib.suppress(httpx.HTTPError):
            return httpx.get(self.url, timeout=5).status_code == 200
        return False


@dataclass
class Engine:
    """The engine's events for the stack's containers, as they arrive."""

    events: list[dict[str, Any]] = field(default_factory=list)

    def of(self, name: str, action: str, since: float = 0.0) -> list[dict[str, Any]]:
        return [
            e
            for e in list(self.events)
            if e["name"] == name and e["action"] == action and e["time"] >= since
        ]


def _record(client: Any, prefix: str, engine: Engine, stop: threading.Event) -> None:
    stream = client.events(decode=True, filters={"type": "container"}, since=time.time())
    try:
        for event in stream:
            attrs = (event.get("Actor") or {}).get("Attributes") or {}
            name = str(attrs.get("name", ""))
            if name.startswith(prefix):
                engine.events.append(
                    {
                        "name": name,
                        "action": str(event.get("Action", "")),
                        "exit": attrs.get("exitCode"),
                        "time": event.get("timeNano", 0) / 1e9,
                    }
                )
            if stop.is_set():
                break
    finally:
        stream.close()


@contextlib.contextmanager
def engine_events(client: Any, prefix: str) -> Iterator[Engine]:
    engine = Engine()
    stop = threading.Event()
    thread = threading.Thread(target=_record, args=(client, prefix, engine, stop), daemon=True)
    thread.start()
    try:
        yield engine
    finally:
        stop.set()  # the next event ends the loop; the thread is a daemon either way


def _run(client: Any, image: str, name: str, cmd: list[str], **kwargs: Any) -> Any:
    return client.containers.run(image, cmd, name=name, detach=True, **kwargs)


@contextlib.contextmanager
def stack(client: Any, image: str, folder: Path) -> Iterator[Stack]:
    """Start the stack (about 5 s), yield it healthy, remove it (containers and network)."""
    prefix = f"guard-flows-{os.getpid()}-{time.time_ns() % 10**6}"
    (folder / "logs").mkdir(parents=True, exist_ok=True)
    (folder / "app.py").write_text(SOURCE)
    (folder / "nginx.conf").write_text(NGINX.replace("APP", f"{prefix}-app"))
    app_log = folder / "logs" / "app.log"
    app_log.touch()
    network = client.networks.create(prefix, driver="bridge", labels={"guard.test": "1"})
    labels = {s: {"guard.flows": f"{prefix}-{s}"} for s in SERVICES}
    common: dict[str, Any] = {"network": prefix, "init": False}
    made: dict[str, Any] = {}
    mount = {str(folder): {"bind": "/stack", "mode": "ro"}}
    try:
        made["pg"] = _run(
            client,
            image,
            f"{prefix}-pg",
            ["sh", "-c", PG_START],
            user="postgres",
            labels=labels["pg"],
            **common,
        )
        made["redis"] = _run(
            client,
            image,
            f"{prefix}-redis",
            REDIS_START,
            tmpfs={"/data": "size=1m"},
            labels=labels["redis"],
            **common,
        )
        env = {"PG_HOST": f"{prefix}-pg", "REDIS_HOST": f"{prefix}-redis"}
        made["app"] = _run(
            client,
            image,
            f"{prefix}-app",
            ["python3", "-u", "/stack/app.py"],
            environment=env,
            volumes={**mount, str(folder / "logs"): {"bind": "/logs", "mode": "rw"}},
            mem_limit="96m",
            memswap_limit="96m",
            restart_policy={"Name": "always"},
            labels=labels["app"],
            **common,
        )
        port = free_port()
        made["web"] = _run(
            client,
            image,
            f"{prefix}-web",
            ["nginx", "-e", "stderr", "-c", "/stack/nginx.conf", "-g", "daemon off;"],
            volumes=mount,
            ports={"8080/tcp": ("127.0.0.1", port)},
            labels=labels["web"],
            **common,
        )
        s = Stack(prefix, network, made, app_log, f"http://127.0.0.1:{port}/health", labels)
        wait_for(s.healthy, 90, "the stack to answer /health through nginx")
        yield s
    finally:
        for c in made.values():
            with contextlib.suppress(Exception):
                c.remove(force=True)
        with contextlib.suppress(Exception):
            network.remove()
