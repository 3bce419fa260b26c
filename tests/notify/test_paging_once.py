"""``guard run --once`` delivers the pages it queued before it exits, and the resolves of the
incidents its pass resolved; ``guard incidents show --json`` says who acknowledged, and when.
Real CLI subprocesses against the local PagerDuty server."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from guard.notify.pagers import dedup_key
from tests.conftest import GuardHome
from tests.fakes.pagerduty import ROUTING_KEY, PagerDutyServer
from tests.helpers.agent import find
from tests.helpers.telegram import Service, http_playbook


def configure(home: GuardHome, pd: PagerDutyServer) -> None:
    home.write_config(
        {
            "sandbox": {"backend": "local"},
            "notifiers": {"pagerduty": {"primary": {"routing_key": ROUTING_KEY, "url": pd.url}}},
            "routes": [{"match": {}, "notify": ["pagerduty:primary"]}],
        }
    )


def show(home: GuardHome, incident_id: int) -> dict[str, Any]:
    return dict(json.loads(home.cli("incidents", "show", str(incident_id), "--json").stdout))


def test_run_once_delivers_its_pages_before_it_exits_and_resolves_them_next_time(
    home: GuardHome, pd: PagerDutyServer, service: Service
) -> None:
    configure(home, pd)
    http_playbook(home, service, auto_resolve=True)
    home.cli("run", "--once", "--heal")  # no skill for it: Guard asks, and the route pages
    inc = find(home, state="awaiting_human")
    assert inc is not None, "Guard did not ask"
    key = dedup_key(inc["id"])
    assert pd.actions(key) == ["trigger"]  # sent by the time the command returned
    (trigger,) = pd.events
    assert trigger["payload"]["custom_details"]["reason"] == "route"
    service.healthy = True
    home.cli("run", "--once")  # the check passes: resolved, and its open page with it
    assert show(home, inc["id"])["state"] == "resolved"
    assert pd.actions(key) == ["trigger", "resolve"]
    assert [a["state"] for a in pd.alerts] == ["resolved"]
    home.cli("run", "--once")
    assert len(pd.events) == 2  # nothing is sent twice


def test_incidents_show_json_has_the_acknowledgement(
    home: GuardHome, pd: PagerDutyServer, service: Service
) -> None:
    configure(home, pd)
    http_playbook(home, service)
    home.cli("run", "--once", "--heal")
    inc = find(home, state="awaiting_human")
    assert inc is not None, "Guard did not ask"
    assert show(home, inc["id"])["ack"] is None
    said = home.cli("ack", str(inc["id"])).stdout
    ack = show(home, inc["id"])["ack"]
    assert set(ack) == {"by", "at"} and ack["by"].startswith("cli:")
    assert f"acknowledged by {ack['by']}" in said
    at = datetime.fromisoformat(ack["at"])
    assert at.utcoffset() is not None  # ISO 8601 with its offset (UTC)
    again = home.cli("ack", str(inc["id"])).stdout  # names the first acknowledgement
    assert f"already acknowledged by {ack['by']} at {at.isoformat(timespec='seconds')}" in again
