"""The local Events API v2 server refuses what PagerDuty refuses and applies events to alerts
as PagerDuty does, so tests that pass against it prove Guard's events would be accepted."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from tests.fakes.pagerduty import ROUTING_KEY, running


def _post(url: str, body: Any) -> tuple[int, dict[str, Any]]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def _trigger(**changes: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "routing_key": ROUTING_KEY,
        "event_action": "trigger",
        "dedup_key": "guard-incident-1",
        "payload": {"summary": "db down", "source": "guard", "severity": "critical"},
    }
    event.update(changes)
    return event


def test_accepts_a_trigger_then_resolves_the_same_alert() -> None:
    with running() as pd:
        assert _post(pd.url, _trigger()) == (
            202,
            {"status": "success", "message": "Event processed", "dedup_key": "guard-incident-1"},
        )
        assert _post(pd.url, _trigger())[0] == 202  # same key: the same alert
        resolve = {
            "routing_key": ROUTING_KEY,
            "event_action": "resolve",
            "dedup_key": "guard-incident-1",
        }
        assert _post(pd.url, resolve)[0] == 202
        assert [(a["state"], a["log"]) for a in pd.alerts] == [
            ("resolved", ["trigger", "trigger", "resolve"])
        ]
        assert pd.actions("guard-incident-1") == ["trigger", "trigger", "resolve"]


def test_refuses_malformed_events_with_400_and_keeps_none() -> None:
    with running() as pd:
        bad = [
            _trigger(payload=None),
            _trigger(routing_key="short"),
            _trigger(payload={"summary": "x", "source": "guard", "severity": "fatal"}),
            _trigger(event_action="page"),
            {"routing_key": ROUTING_KEY, "event_action": "resolve"},
            b"{not json",
        ]
        for event in bad:
            status, reply = _post(pd.url, event)
            assert status == 400, event
            assert reply["status"] == "invalid event" and reply["errors"], reply
        assert pd.events == [] and pd.alerts == []


def test_answers_429_when_told_then_accepts() -> None:
    with running() as pd:
        pd.fail(429, times=2)
        assert _post(pd.url, _trigger())[0] == 429
        assert _post(pd.url, _trigger())[0] == 429
        assert _post(pd.url, _trigger())[0] == 202
        assert len(pd.events) == 1 and [r["status"] for r in pd.requests] == [429, 429, 202]
