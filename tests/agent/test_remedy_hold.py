"""Guard's own actions are expected, not incidents: a real container restarted by a trusted
skill under a real `guard run`, with an HTTP check of a service that depends on it."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import GuardHome
from tests.correlation.shop import write_playbook
from tests.helpers.agent import (
    db_rows,
    free_port,
    guard_process,
    incidents,
    setup_docker_home,
    show,
    tune_skill,
    wait_for,
)

pytestmark = pytest.mark.docker

SETTLE = 3.0
# Unhealthy while /tmp/sick exists; slow to serve after a start (its HTTP check fails for a
# while); writes a FATAL line when /tmp/corrupt appears. PID 1 ignores SIGTERM: a restart
# kills it (exit 137).
APP = (
    "rm -f /tmp/sick /tmp/corrupt; echo app starting; sleep 3; mkdir -p /tmp/www; "
    "echo up > /tmp/www/metrics; "
    "(while true; do if [ -f /tmp/corrupt ]; then rm -f /tmp/corrupt; "
    "echo 'FATAL data corrupt'; fi; sleep 0.2; done) & exec httpd -f -p 8080 -h /tmp/www"
)


@contextlib.contextmanager
def app(client: Any, image: str, labels: dict[str, str]) -> Iterator[tuple[Any, str]]:
    """The held service's container (healthy, serving) and its URL."""
    port = free_port()
    container = client.containers.run(
        image,
        ["sh", "-c", APP],
        name=f"guard-test-held-{time.time_ns()}",
        detach=True,
        labels={"guard.test": "1", **labels},
        ports={"8080/tcp": ("127.0.0.1", port)},
        healthcheck={
            "test": ["CMD-SHELL", "test ! -f /tmp/sick"],
            "interval": 1_000_000_000,
            "timeout": 1_000_000_000,
            "retries": 1,
        },
    )
    try:
        wait_for(lambda: _health(container) == "healthy", 30, "the app to be healthy")
        url = f"http://127.0.0.1:{port}/metrics"
        wait_for(lambda: _serves(url), 30, "the app to serve")  # httpd starts 3 s after health
        yield container, url
    finally:
        with contextlib.suppress(Exception):
            container.remove(force=True)


def _serves(url: str) -> bool:
    with contextlib.suppress(httpx.HTTPError):
        return httpx.get(url, timeout=2).status_code == 200
    return False


def _health(container: Any) -> str:
    container.reload()
    return str(((container.attrs.get("State") or {}).get("Health") or {}).get("Status"))


def held_home(home: GuardHome) -> dict[str, str]:
    """Guard watching the app (service ``app``, a log rule) and ``web``'s HTTP check through
    it (``web`` depends on ``app``); the built-in skills restart an unhealthy container and
    start an exited one (the second remedy a self-inflicted exit would get)."""
    labels = setup_docker_home(
        home,
        skills=["docker-restart-unhealthy", "docker-start-exited"],
        agent={"settle": f"{SETTLE:g}s"},
    )
    tune_skill(
        home,
        "docker-restart-unhealthy",
        steps=[
            {
                "action": "docker.restart",
                "args": {"container": "{{ incident.target }}", "timeout": 1},
            },
            {"wait": "10s"},  # the dependant's check fails while the app starts; log lines later
            {"verify": {"timeout": "60s", "interval": "1s"}},
        ],
    )
    return labels


def watch(home: GuardHome, labels: dict[str, str], url: str) -> None:
    ((key, value),) = labels.items()
    write_playbook(
        home,
        "held",
        [
            {
                "id": "app-container",
                "type": "docker",
                "service": "app",
                "selector": {"label": f"{key}={value}"},
                "every": "1h",
                "rules": [{"kind": "data_corrupt", "pattern": "FATAL"}],
            },
            {"id": "web-http", "type": "http", "service": "web", "url": url, "every": "1s"},
        ],
        services={"web": {"depends_on": ["app"]}},
    )


def audited(home: GuardHome, action: str) -> int:
    return len(db_rows(home, f"select seq from audit_log where action = '{action}'"))


def restarted(home: GuardHome) -> bool:
    """The restart ran and its action step is done (the hold's action window closes)."""
    return bool(
        db_rows(home, "select id from agent_step where kind = 'action' and status = 'done'")
    )


@contextlib.contextmanager
def made_unhealthy(
    home: GuardHome, client: Any, image: str
) -> Iterator[tuple[Any, dict[str, Any]]]:
    """The app watched by a running Guard, made unhealthy: (its container, its incident)."""
    labels = held_home(home)
    with app(client, image, labels) as (container, url):
        watch(home, labels, url)
        with guard_process(home):
            container.exec_run(["touch", "/tmp/sick"])
            inc = wait_for(lambda: next(iter(incidents(home)), None), 60, "the incident")
            yield container, inc


def healed(home: GuardHome, inc: dict[str, Any]) -> None:
    wait_for(lambda: show(home, inc["id"])["state"] == "resolved", 120, "the skill to heal it")


def test_a_restart_by_guard_opens_nothing_and_its_effects_are_on_the_incident_timeline(
    home: GuardHome, docker_client: Any, busybox_image: str
) -> None:
    with made_unhealthy(home, docker_client, busybox_image) as (container, inc):
        healed(home, inc)
        time.sleep(SETTLE + 3)  # the settle period passes; anything late would open now
        everything = incidents(home)
    view = show(home, inc["id"])
    assert inc["kind"] == "container_unhealthy"
    # one fault, one incident: the restart's exit (137) and the dependant's failing HTTP
    # check opened nothing, joined nothing, and no second remedy ran
    assert [(i["id"], i["kind"]) for i in everything] == [(inc["id"], "container_unhealthy")]
    assert view["related"] == []
    assert db_rows(home, "select skill, status from remediation_run") == [
        ("docker-restart-unhealthy", "verified")
    ]
    assert audited(home, "action.docker.restart") == 1
    assert audited(home, "action.docker.start") == 0
    effects = [e for e in view["timeline"] if e["type"] == "expected_effect"]
    kinds = {(e["data"]["monitor"], e["data"]["kind"]) for e in effects}
    assert ("app-container", "container_exited") in kinds, view["timeline"]
    assert any(m == "web-http" for m, _ in kinds), view["timeline"]
    assert all("expected effect of docker.restart on" in e["message"] for e in effects)
    (hold,) = db_rows(home, "select target, action, services, ends_at, effects from remedy_hold")
    assert hold[0] == container.name and hold[1] == "docker.restart"
    assert '"web"' in hold[2] and hold[3] is not None and hold[4] >= len(effects)


def test_a_signal_the_restart_cannot_explain_still_opens_an_incident_during_the_hold(
    home: GuardHome, docker_client: Any, busybox_image: str
) -> None:
    with made_unhealthy(home, docker_client, busybox_image) as (container, inc):
        wait_for(lambda: restarted(home), 60, "the restart")
        time.sleep(SETTLE + 1)  # past the action's window, inside the hold (wait 10s)
        assert show(home, inc["id"])["state"] == "remediating"
        container.exec_run(["touch", "/tmp/corrupt"])
        corrupt = wait_for(
            lambda: next((i for i in incidents(home) if i["kind"] == "data_corrupt"), None),
            30,
            "the log line to open its own incident",
        )
        healed(home, inc)
        everything = incidents(home)
    assert corrupt["target"] == container.name
    assert sorted(i["kind"] for i in everything) == ["container_unhealthy", "data_corrupt"]
    assert db_rows(home, "select count(*) from remedy_hold") == [(1,)]
