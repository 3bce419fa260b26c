"""``guard run`` serves the hooks: an alert posted to the real process is an incident, a
redelivery after a restart counts once, and SIGTERM still stops it cleanly."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from tests.conftest import GuardHome
from tests.deploy.test_web import Running, free_port, guard_running
from tests.helpers.intake import TOKEN, am_alert, am_payload, am_source

AUTH = {"Authorization": f"Bearer {TOKEN}"}


@contextmanager
def guard_run(home: GuardHome, port: int) -> Iterator[Running]:
    with guard_running(home, port) as running:
        yield running
    assert f"and /hooks on http://127.0.0.1:{port}" in running.err
    assert TOKEN not in running.err


def incidents(home: GuardHome) -> list[dict]:
    return json.loads(home.cli("incidents", "list", "--json").stdout)


def test_guard_run_takes_alerts_and_a_retry_after_restart_counts_once(home: GuardHome) -> None:
    port = free_port()
    home.write_config({"http_host": "127.0.0.1", "http_port": port, "intake": [am_source()]})
    payload = am_payload(am_alert("InstanceDown", "api:9100"))
    with guard_run(home, port) as guard:
        answer = httpx.post(f"{guard.url}/hooks/am", json=payload, headers=AUTH, timeout=30)
        assert answer.status_code == 200
        assert guard.get("/healthz").status_code == 200
    [found] = incidents(home)
    assert (found["source"], found["kind"], found["target"]) == (
        "alertmanager",
        "InstanceDown",
        "api:9100",
    )
    assert found["count"] == 1
    with guard_run(home, port) as guard:  # Alertmanager retries what it thinks failed
        answer = httpx.post(f"{guard.url}/hooks/am", json=payload, headers=AUTH, timeout=30)
        assert answer.status_code == 200
        resolved = am_payload(am_alert("InstanceDown", "api:9100", status="resolved"))
        httpx.post(f"{guard.url}/hooks/am", json=resolved, headers=AUTH, timeout=30)
    [found] = incidents(home)
    assert found["count"] == 1 and found["state"] == "resolved"
