"""A real Prometheus and a real Alertmanager hand Guard an alert, and Guard heals its cause.

Prometheus scrapes a container; the test stops it; the rule fires; Alertmanager routes the alert
to ``guard run``'s hook (docs/ALERTMANAGER.md's configuration); a trusted skill restarts the
container; the alert resolves in Alertmanager and the incident resolves, verified by the
source. Then Guard is killed while the alert fires: Alertmanager's retries and repeats land on
the same incident, its count unchanged.
"""

from __future__ import annotations

import json
import secrets
import signal
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.conftest import GuardHome
from tests.fakes import prometheus as prom_peers
from tests.helpers.agent import (
    find,
    incidents,
    running_guard,
    setup_docker_home,
    show,
    wait_for,
)

pytestmark = pytest.mark.docker

SKILL_MD = (
    "---\nname: restart-scrape-target\ndescription: Restarts the container behind a scrape "
    "target that Prometheus reports down.\nlicense: Apache-2.0\n---\n\n# restart-scrape-target\n\n"
    "## When to use\n\nVictimDown fires.\n\n## Procedure\n\n1. Restart the container.\n\n"
    "## Pitfalls\n\nNone.\n\n## Verification\n\nThe alert resolves.\n"
)


def grafana_payload(status: str) -> dict[str, Any]:
    """A notification in the shape of Grafana's webhook contact point (its docs' example)."""
    labels = {"alertname": "HighLatency", "grafana_folder": "api", "instance": "api-1:8080"}
    alert = {
        "status": status,
        "labels": labels,
        "annotations": {"summary": "p99 latency above 2s"},
        "startsAt": "2026-01-05T10:00:00Z",
        "endsAt": "2026-01-05T10:05:00Z" if status == "resolved" else "0001-01-01T00:00:00Z",
        "generatorURL": "http://grafana:3000/alerting/grafana/aa1/view",
        "fingerprint": "57c6d9296de2ad39",
        "silenceURL": "http://grafana:3000/alerting/silence/new",
        "dashboardURL": "",
        "panelURL": "",
        "values": {"B": 2.31},
        "valueString": "[ var='B' labels={instance=api-1:8080} value=2.31 ]",
    }
    return {
        "receiver": "guard",
        "status": status,
        "orgId": 1,
        "alerts": [alert],
        "groupLabels": {"alertname": "HighLatency"},
        "commonLabels": labels,
        "commonAnnotations": alert["annotations"],
        "externalURL": "http://grafana:3000/",
        "version": "1",
        "groupKey": '{}:{alertname="HighLatency"}',
        "truncatedAlerts": 0,
        "title": f"[{status.upper()}:1] HighLatency (api api-1:8080)",
        "state": "alerting" if status == "firing" else "ok",
        "message": "p99 latency above 2s",
    }


def _setup(home: GuardHome, *, skill: bool) -> tuple[str, str]:
    """Guard with the docs' intake source (and skill); returns (hook URL, token)."""
    token = secrets.token_hex(16)
    intake = prom_peers.doc_block("guard-intake")["intake"]
    intake[0]["token"] = token
    setup_docker_home(home, intake=intake)
    if skill:
        folder = home.root / "skills" / "restart-scrape-target"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(SKILL_MD)
        spec = prom_peers.doc_block("skill")
        (folder / "skill.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    port = yaml.safe_load(home.config.read_text())["http_port"]
    return f"http://127.0.0.1:{port}/hooks/{intake[0]['id']}", token


def _at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _alert_incident(home: GuardHome) -> dict[str, Any] | None:
    return find(home, source="alertmanager", kind=prom_peers.RULE)


@pytest.mark.parametrize("by_api", [False, True], ids=["resolved-notification", "api"])
def test_an_alert_opens_an_incident_a_skill_heals_and_the_source_verifies(
    home: GuardHome, docker_client: Any, busybox_image: str, tmp_path: Path, by_api: bool
):
    """``by_api``: Alertmanager does not send resolutions; Guard asks its API instead."""
    hook, token = _setup(home, skill=True)
    name = f"guard-victim-{uuid.uuid4().hex[:8]}"
    with (
        prom_peers.victim(docker_client, busybox_image, name, {}) as (box, target),
        prom_peers.alertmanager(tmp_path / "am", hook, token, send_resolved=not by_api) as am,
    ):
        if by_api:
            config = yaml.safe_load(home.config.read_text())
            config["intake"][0]["alertmanager_url"] = am.url
            home.config.write_text(yaml.safe_dump(config))
        labels = {"container": name}
        with (
            running_guard(home),
            prom_peers.prometheus(tmp_path / "prom", target, labels, am.url) as prom,
        ):
            alert = prom_peers.fire(home, prom, am, box)
            incident = wait_for(lambda: _alert_incident(home), 60, "the incident")
            assert incident["target"] == name
            opened = show(home, incident["id"])
            latency = (_at(opened["opened_at"]) - _at(alert["startsAt"])).total_seconds()
            print(
                f"MEASURED firing (startsAt) -> incident opened: {latency:.2f}s "
                f"(group_wait {prom_peers.group_wait():g}s)"
            )
            fingerprint = alert["fingerprint"]
            assert opened["details"]["alert"]["fingerprint"] == fingerprint

            resolved = wait_for(
                lambda: (i := show(home, incident["id"]))["state"] == "resolved" and i,
                120,
                "the incident to resolve",
            )
            box.reload()
            assert box.status == "running"  # the skill restarted it
            assert prom_peers.active_alerts(am) == []  # resolved in Alertmanager too
            story = json.dumps(resolved["timeline"])
            assert "docker.restart" in story
            said = (
                f"Alertmanager no longer lists alert {fingerprint} as firing"
                if by_api
                else "alertmanager sent the alert resolved"
            )
            assert f"verify recovery: done ({said})" in story
            assert "check passed again" not in story  # the remedy's verification closed it
            print(home.cli("incidents", "show", str(incident["id"])).stdout)


def test_alertmanager_retries_through_a_guard_restart_count_once(
    home: GuardHome, docker_client: Any, busybox_image: str, tmp_path: Path
):
    hook, token = _setup(home, skill=False)
    name = f"guard-victim-{uuid.uuid4().hex[:8]}"
    with (
        prom_peers.victim(docker_client, busybox_image, name, {}) as (box, target),
        prom_peers.alertmanager(tmp_path / "am", hook, token) as am,
        prom_peers.prometheus(tmp_path / "prom", target, {"container": name}, am.url) as prom,
    ):
        with running_guard(home) as (proc, _):
            prom_peers.serving(home)
            wait_for(lambda: prom_peers.scraped_up(prom), 60, "Prometheus to scrape the target")
            box.stop(timeout=1)
            incident = wait_for(lambda: _alert_incident(home), 60, "the incident")
            sent = prom_peers.delivered(am)
            # Alertmanager repeats the firing alert (repeat_interval): it counts once
            wait_for(lambda: prom_peers.delivered(am) >= sent + 2, 60, "two repeats")
            assert (_alert_incident(home) or {}).get("count") == incident["count"] == 1
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        failed = prom_peers.failed(am)
        wait_for(lambda: prom_peers.failed(am) >= failed + 2, 60, "Alertmanager to retry")
        sent = prom_peers.delivered(am)
        with running_guard(home):
            wait_for(lambda: prom_peers.delivered(am) >= sent + 2, 60, "deliveries after restart")
            again = [i for i in incidents(home) if i["source"] == "alertmanager"]
            assert [i["id"] for i in again] == [incident["id"]]
            assert again[0]["count"] == 1
            assert again[0]["state"] != "resolved"

            box.start()  # the target is back: the resolved alert resolves the incident
            wait_for(
                lambda: show(home, incident["id"])["state"] == "resolved", 60, "the resolution"
            )


def test_the_docs_grafana_contact_point_reaches_guard(home: GuardHome):
    """Grafana's contact point of docs/ALERTMANAGER.md, sent as Grafana sends it."""
    token = secrets.token_hex(16)
    setup_docker_home(home, intake=[{"id": "grafana", "type": "grafana", "token": token}])
    port = yaml.safe_load(home.config.read_text())["http_port"]
    point = prom_peers.doc_block("grafana-contact-point")["contactPoints"][0]["receivers"][0]
    settings = point["settings"]
    url = settings["url"].replace("127.0.0.1:8080", f"127.0.0.1:{port}")
    credentials = settings["authorization_credentials"].replace("$GUARD_HOOK_TOKEN", token)
    header = {"Authorization": f"{settings['authorization_scheme']} {credentials}"}
    body = grafana_payload("firing")
    with running_guard(home):
        prom_peers.serving(home)
        answer = httpx.request(settings["httpMethod"], url, json=body, headers=header, timeout=30)
        assert answer.status_code // 100 == 2, answer.text
        incident = wait_for(lambda: find(home, source="grafana"), 30, "the Grafana incident")
        assert incident["kind"] == "HighLatency"
        wrong = {"Authorization": f"{settings['authorization_scheme']} not-{credentials}"}
        assert httpx.post(url, json=body, headers=wrong, timeout=30).status_code == 401
        resolved = grafana_payload("resolved")
        httpx.post(url, json=resolved, headers=header, timeout=30).raise_for_status()
        wait_for(
            lambda: show(home, incident["id"])["state"] == "resolved", 30, "Grafana's resolution"
        )
