"""``nginx-upstream-down`` against its real faults, under a real ``guard run``: nginx (Debian's,
in the stack image built offline) proxies to a python3 upstream over a Docker network the test
creates; traffic goes through it all along. The upstream is stopped, then (healed) dropped off
the network: each time nginx logs its upstream error, the question carries the upstream's
state and networks (``docker.inspect``), and the approved remedy (``docker.start``,
``docker.network_connect peer=nginx``) heals it, verified by the log rule that fired."""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Iterator
from functools import partial
from typing import Any

import httpx
import pytest

from tests.conftest import GuardHome
from tests.helpers.agent import (
    find,
    incidents,
    past_flap_window,
    running_guard,
    setup_docker_home,
    show,
    wait_for,
)

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]

SKILL = "nginx-upstream-down"
RULE = (  # docs/STARTER.md gives this rule
    r"connect\(\) failed \(111: Connection refused\) while connecting to upstream"
    r"|upstream timed out|could not be resolved|no live upstreams"
)
NGINX_CONF = """\
daemon off;
worker_processes 1;
error_log stderr warn;
pid /tmp/nginx.pid;
events { worker_connections 64; }
http {
  access_log off;
  server {
    listen 80;
    resolver 127.0.0.11 valid=1s ipv6=off;
    resolver_timeout 2s;
    location / {
      set $up http://UPSTREAM:8080;
      proxy_pass $up;
      proxy_connect_timeout 2s;
    }
  }
}
"""


class Edge:
    """nginx in front of one upstream on a network of the test's own; ``url`` reaches nginx."""

    def __init__(self, docker_client: Any, image: str, tag: str) -> None:
        self.network = docker_client.networks.create(f"{tag}-net", driver="bridge")
        self.made: list[Any] = []
        self.run = partial(
            docker_client.containers.run, image, detach=True, labels={"guard.test": "1"}
        )
        self.tag = tag
        self.url = ""

    def start(self) -> None:
        run, tag = self.run, self.tag
        self.upstream = run(
            ["python3", "-m", "http.server", "8080"], name=f"{tag}-api", network=self.network.name
        )
        self.made.append(self.upstream)
        conf = NGINX_CONF.replace("UPSTREAM", self.upstream.name)
        self.nginx = run(
            ["sh", "-c", f"cat > /etc/nginx/nginx.conf <<'EOF'\n{conf}EOF\nexec nginx"],
            name=f"{tag}-nginx",
            network=self.network.name,
            ports={"80/tcp": ("127.0.0.1", None)},
        )
        self.made.append(self.nginx)
        self.nginx.reload()
        port = self.nginx.attrs["NetworkSettings"]["Ports"]["80/tcp"][0]["HostPort"]
        self.url = f"http://127.0.0.1:{port}/"

    def status(self) -> int:
        try:
            return httpx.get(self.url, timeout=5).status_code
        except httpx.HTTPError:
            return 0

    def remove(self) -> None:
        for c in self.made:
            with contextlib.suppress(Exception):
                c.remove(force=True)
        with contextlib.suppress(Exception):
            self.network.remove()


@pytest.fixture
def edge(docker_client: Any) -> Iterator[Edge]:
    from tests.flows.image import ensure_stack_image

    made = Edge(docker_client, ensure_stack_image(docker_client), f"guard-test-{os.getpid()}-edge")
    try:
        made.start()
        wait_for(lambda: made.status() == 200, 30, "nginx to reach its upstream")
        yield made
    finally:
        made.remove()


@contextlib.contextmanager
def traffic(edge: Edge) -> Iterator[None]:
    """A request through nginx every 0.3 s, as users would send them."""
    stop = threading.Event()

    def send() -> None:
        while not stop.wait(0.3):
            edge.status()

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(10)


def asked_then_healed(home: GuardHome, after: int = 0) -> dict[str, Any]:
    """The next nginx incident (id over ``after``) waits for a human; approved, it resolves
    by the skill. It, with its evidence as the question showed it."""
    inc = wait_for(
        lambda: next(
            (
                i
                for i in incidents(home)
                if i["id"] > after
                and i["kind"] == "nginx_upstream_error"
                and i["state"] == "awaiting_human"
            ),
            None,
        ),
        90,
        "the nginx incident to ask a human",
    )
    n = inc["id"]
    evidence = str(show(home, n)["details"]["evidence"])
    home.cli("approve", str(n), "--skill", SKILL)
    done = wait_for(lambda: find(home, id=n, state="resolved"), 90, f"#{n} healed")
    assert show(home, n)["details"]["resolved_by"] == SKILL
    return {"evidence": evidence, **done}


def test_nginx_s_stopped_then_disconnected_upstream_is_shown_and_healed(
    home: GuardHome, edge: Edge
) -> None:
    setup_docker_home(home, skills=[SKILL])
    home.playbook(
        "edge",
        [
            {
                "id": "edge-nginx",
                "type": "docker",
                "selector": {"name": edge.nginx.name},
                "every": "1s",
                "service": edge.upstream.name,  # the upstream container, for the skill
                "rules": [{"kind": "nginx_upstream_error", "pattern": RULE, "quiet": "2s"}],
                "resolve_after": "10m",
            }
        ],
    )
    with running_guard(home), traffic(edge):
        edge.upstream.stop(timeout=1)  # fault 1: the upstream is down
        first = asked_then_healed(home)
        assert f"$ docker.inspect container={edge.upstream.name}" in first["evidence"]
        assert f"container {edge.upstream.name}: exited" in first["evidence"]
        # nginx's own line: refused while the stopping upstream's name still resolves, then
        # "could not be resolved" once Docker's DNS forgot it (which comes first is timing)
        assert re.search(RULE, first["evidence"]), first["evidence"]
        assert edge.status() == 200

        wait_for(lambda: past_flap_window(home, first["id"]), 30, "the flap window")
        edge.network.disconnect(edge.upstream)  # fault 2: running, off nginx's network
        second = asked_then_healed(home, first["id"])
        assert f"container {edge.upstream.name}: running" in second["evidence"]
        assert "networks: none" in second["evidence"]
        edge.upstream.reload()
        assert edge.network.name in edge.upstream.attrs["NetworkSettings"]["Networks"]
        assert edge.status() == 200
    print(second["evidence"])
