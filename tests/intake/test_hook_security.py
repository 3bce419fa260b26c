"""Security review items of the alert intake (issue #39), against a real ``guard run``:

- 5: a request that fails authentication never spends the source's rate budget;
- 6: a captured signed ``resolved``, replayed, never ends a newer incident (refused by its signed
  timestamp and the replay window; and in triage a ``resolved`` ends only its own episode);
- 10: an intake credential shorter than 16 characters is refused, naming the field.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from tests.conftest import GuardHome
from tests.deploy.test_web import free_port
from tests.helpers.intake import HMAC_KEY, TOKEN, am_alert, am_payload, signature, stamped
from tests.intake.test_guard_run import guard_run, incidents
from tests.intake.test_intake_config import check

SIGNED_AM = {
    "id": "signed",
    "type": "alertmanager",
    "hmac_secret": HMAC_KEY,
    "hmac_header": "X-Signature",
    "rate": "1/m",
    "burst": 5,
}
UPTIME = {
    "id": "uptime",
    "type": "webhook",
    "hmac_secret": HMAC_KEY,
    "hmac_header": "X-Signature",
    "hmac_timestamp_header": "X-Signature-Timestamp",
    "kind": "'endpoint_down'",
    "target": "check.url",
    "status": "state == 'up' && 'resolved' || 'firing'",
}


def configure(home: GuardHome, *sources: dict[str, Any]) -> int:
    port = free_port()
    home.write_config({"http_host": "127.0.0.1", "http_port": port, "intake": list(sources)})
    return port


def uptime(state: str) -> bytes:
    check = {"name": "api health", "url": "https://api.example.com/health"}
    return json.dumps({"state": state, "reason": "HTTP 502", "check": check}).encode()


def test_wrongly_signed_requests_never_spend_the_senders_budget(home: GuardHome) -> None:
    port = configure(home, SIGNED_AM)
    with guard_run(home, port) as guard, httpx.Client(base_url=guard.url, timeout=30) as http:
        statuses: dict[str, list[int]] = {"good": [], "forged": []}
        for i in range(5):  # the whole burst, each between 40 forged requests
            body = json.dumps(am_payload(am_alert("InstanceDown", f"api-{i}:9100"))).encode()
            for _ in range(40):
                forged = {"X-Signature": signature(body, key="not-the-key-at-all")}
                statuses["forged"].append(
                    http.post("/hooks/signed", content=body, headers=forged).status_code
                )
            good = {"X-Signature": signature(body)}
            statuses["good"].append(
                http.post("/hooks/signed", content=body, headers=good).status_code
            )
        assert statuses == {"good": [200] * 5, "forged": [401] * 200}
    assert len(incidents(home)) == 5


def test_a_replayed_signed_resolved_never_ends_the_new_incident(home: GuardHome) -> None:
    port = configure(home, {**UPTIME, "replay_window": "15s"})
    with guard_run(home, port) as guard, httpx.Client(base_url=guard.url, timeout=30) as http:
        now = time.time()

        def send(body: bytes, headers: dict[str, str]) -> httpx.Response:
            return http.post("/hooks/uptime", content=body, headers=headers)

        assert send(uptime("down"), stamped(uptime("down"), now - 2)).status_code == 200
        captured = (uptime("up"), stamped(uptime("up"), now - 1))
        assert send(*captured).status_code == 200
        assert [i["state"] for i in incidents(home)] == ["resolved"]
        assert send(uptime("down"), stamped(uptime("down"), now)).status_code == 200
        assert [i["state"] for i in incidents(home)][-1] == "open"
        replay = send(*captured)  # within the window: already taken
        assert replay.status_code == 409, replay.text
        assert "replay" in replay.json()["error"]
        time.sleep(max(0.0, now + 14.5 - time.time()))  # the captured one is 15.5 s old
        late = send(*captured)
        assert late.status_code == 401, late.text
        assert "replay_window" in late.json()["error"]
        unstamped = {"X-Signature": signature(uptime("up"))}  # the timestamp is required
        assert send(uptime("up"), unstamped).status_code == 401
    assert [i["state"] for i in incidents(home)][-1] == "open"


def test_a_resolved_signed_before_the_latest_firing_does_not_end_it(home: GuardHome) -> None:
    port = configure(home, UPTIME)
    with guard_run(home, port) as guard, httpx.Client(base_url=guard.url, timeout=30) as http:
        now = time.time()
        for state, at in (("down", now - 30), ("down", now - 10), ("up", now - 20)):
            body = uptime(state)  # the resolved of an earlier episode, delayed in flight
            sent = http.post("/hooks/uptime", content=body, headers=stamped(body, at))
            assert sent.status_code == 200, sent.text
        assert [i["state"] for i in incidents(home)] == ["open"]
        body = uptime("up")
        assert (
            http.post("/hooks/uptime", content=body, headers=stamped(body, now)).status_code == 200
        )
    assert [i["state"] for i in incidents(home)] == ["resolved"]


def test_an_alertmanager_resolved_replayed_after_a_new_firing_ends_nothing(home: GuardHome) -> None:
    port = configure(home, {"id": "am", "type": "alertmanager", "token": TOKEN})
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    first, again = "2026-12-05T07:00:00Z", "2026-12-05T08:00:00Z"
    with guard_run(home, port) as guard, httpx.Client(base_url=guard.url, timeout=30) as http:
        resolved = json.dumps(
            am_payload(am_alert("InstanceDown", "api:9100", status="resolved", starts=first))
        ).encode()
        for body in (
            json.dumps(am_payload(am_alert("InstanceDown", "api:9100", starts=first))).encode(),
            resolved,
            json.dumps(am_payload(am_alert("InstanceDown", "api:9100", starts=again))).encode(),
            resolved,  # the captured resolved, byte for byte
        ):
            assert http.post("/hooks/am", content=body, headers=auth).status_code == 200
    assert [i["state"] for i in incidents(home)][-1] == "open"


def test_short_intake_credentials_are_refused_naming_the_field(home: GuardHome) -> None:
    am = {"id": "am", "type": "alertmanager"}
    for source, field in (
        ({**am, "token": ""}, "intake[0].token"),
        ({**am, "token": "short"}, "intake[0].token"),
        ({**am, "hmac_secret": "", "hmac_header": "X-Signature"}, "intake[0].hmac_secret"),
    ):
        out = check(home, [source])
        assert field in out and "16 characters" in out, out
        home.write_config({"http_host": "127.0.0.1", "http_port": free_port(), "intake": [source]})
        run = home.cli("run", "--no-agent", check=False, timeout=60)
        assert run.returncode == 2, run.stdout + run.stderr
        assert field in run.stderr and "16 characters" in run.stderr, run.stderr


def test_a_webhook_signed_over_its_body_alone_is_warned_of_replays(home: GuardHome) -> None:
    """The one case the episode rule cannot cover: no signed time, no alert id."""
    bare = {k: v for k, v in UPTIME.items() if k != "hmac_timestamp_header"}
    home.write_config({"intake": [bare]})
    proc = home.cli("check-config")
    assert "warning: intake[0] (uptime): signed without hmac_timestamp_header" in proc.stderr
    assert "dedup_key" in proc.stderr
    for covered in (UPTIME, {**bare, "dedup_key": "check.name"}, SIGNED_AM):
        home.write_config({"intake": [covered]})
        assert "hmac_timestamp_header" not in home.cli("check-config").stderr, covered
