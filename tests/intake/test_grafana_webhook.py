"""Grafana's alerting webhook and a generic JSON webhook (JMESPath), in the shapes their
documentation shows: they open, update and resolve incidents like Alertmanager's."""

from __future__ import annotations

from typing import Any

from tests.conftest import GuardHome
from tests.helpers.intake import TOKEN, serving

GRAFANA_TARGET = "{{ labels.zone }}"


def grafana_payload(status: str, *, starts: str = "2026-12-05T09:51:03.157076+02:00") -> dict:
    """Grafana's webhook contact point body (its documentation's example, one alert)."""
    firing = status == "firing"
    return {
        "receiver": "guard",
        "status": status,
        "orgId": 1,
        "alerts": [
            {
                "status": status,
                "labels": {"alertname": "High memory usage", "team": "blue", "zone": "us-1"},
                "annotations": {
                    "description": "The system has high memory usage",
                    "runbook_url": "https://myrunbook.com/runbook/1234",
                    "summary": "This alert was triggered for zone us-1",
                },
                "startsAt": starts,
                "endsAt": "0001-01-01T00:00:00Z" if firing else "2026-12-05T10:01:03+02:00",
                "generatorURL": "https://play.grafana.org/alerting/1afz29v7z/edit",
                "fingerprint": "c6eadffa33fcdf37",
                "silenceURL": "https://play.grafana.org/alerting/silence/new?alertmanager=grafana",
                "dashboardURL": "",
                "panelURL": "",
                "values": {"B": 44.23943737541908, "C": 1},
            }
        ],
        "groupLabels": {},
        "commonLabels": {"team": "blue"},
        "commonAnnotations": {},
        "externalURL": "https://play.grafana.org/",
        "version": "1",
        "groupKey": '{}:{alertname="High memory usage"}',
        "truncatedAlerts": 0,
        "title": "[FIRING:1]  (blue)",
        "state": "alerting" if firing else "ok",
        "message": "**Firing**\n\nLabels:\n - alertname = High memory usage\n",
    }


async def test_grafana_opens_updates_and_resolves(home: GuardHome) -> None:
    source = {"id": "grafana", "type": "grafana", "token": TOKEN, "target": GRAFANA_TARGET}
    async with serving(home, [source]) as hook:
        assert (await hook.post("grafana", grafana_payload("firing"))).status_code == 200
        [incident] = hook.incidents()
        assert (incident.source, incident.kind, incident.target) == (
            "grafana",
            "High memory usage",
            "us-1",
        )
        assert incident.message == "This alert was triggered for zone us-1"
        assert incident.details["alert"]["fingerprint"] == "c6eadffa33fcdf37"
        await hook.post("grafana", grafana_payload("firing"))  # repeat: same occurrence
        again = grafana_payload("firing", starts="2026-12-05T11:00:00+02:00")
        await hook.post("grafana", again)  # a new occurrence updates the incident
        [incident] = hook.incidents()
        assert incident.count == 2 and incident.state == "open"
        resolved = grafana_payload("resolved", starts="2026-12-05T11:00:00+02:00")
        assert (await hook.post("grafana", resolved)).status_code == 200
        assert hook.incidents()[0].state == "resolved"


UPTIME = {
    "id": "uptime",
    "type": "webhook",
    "token": TOKEN,
    "kind": "'endpoint_down'",
    "target": "check.url",
    "severity": "check.priority",
    "message": "join(': ', [check.name, reason])",
    "status": "state == 'up' && 'resolved' || 'firing'",
    "dedup_key": "event_id",
}


def uptime_event(state: str, event_id: str = "evt-41", reason: str = "HTTP 502") -> dict[str, Any]:
    """An uptime checker's own JSON: nothing Guard knows, mapped by JMESPath."""
    return {
        "event_id": event_id,
        "state": state,
        "reason": reason,
        "check": {
            "name": "api health",
            "url": "https://api.example.com/health",
            "priority": "warning",
        },
    }


async def test_a_generic_webhook_is_mapped_by_jmespath(home: GuardHome) -> None:
    async with serving(home, [UPTIME]) as hook:
        for _ in range(2):  # a retry of one event: same dedup_key
            assert (await hook.post("uptime", uptime_event("down"))).status_code == 200
        [incident] = hook.incidents()
        assert (incident.source, incident.kind, incident.target) == (
            "webhook",
            "endpoint_down",
            "https://api.example.com/health",
        )
        assert incident.severity == "warning" and incident.count == 1
        assert incident.message == "api health: HTTP 502"
        await hook.post("uptime", uptime_event("down", event_id="evt-42"))  # another outage
        assert len(hook.incidents()) == 2
        assert (await hook.post("uptime", uptime_event("up"))).status_code == 200
        states = {i.details["alert"]["dedup_key"]: i.state for i in hook.incidents()}
        assert states == {"evt-41": "resolved", "evt-42": "open"}


async def test_a_webhook_without_a_mapped_field_gets_400_naming_it(home: GuardHome) -> None:
    async with serving(home, [UPTIME]) as hook:
        body = uptime_event("down")
        del body["check"]["url"]
        answer = await hook.post("uptime", body)
        assert answer.status_code == 400
        assert answer.json()["error"].startswith("target: the JMESPath 'check.url' finds nothing")
        del body["check"]  # join() then gets a null: the expression fails, named
        answer = await hook.post("uptime", body)
        assert answer.status_code == 400
        assert answer.json()["error"].startswith("message: the JMESPath")
        assert hook.incidents() == []
