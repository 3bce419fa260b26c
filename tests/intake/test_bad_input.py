"""What a hook refuses, with which status, and that what it acknowledged is never lost."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from loguru import logger
from sqlalchemy.exc import OperationalError
from sqlmodel import select

from guard.hooks.guards import RateLimit
from guard.store.models import AuditEntry
from guard.telemetry import metrics
from tests.conftest import GuardHome
from tests.helpers.intake import (
    HMAC_KEY,
    TOKEN,
    am_alert,
    am_payload,
    am_source,
    serving,
    signature,
)

HMAC_SOURCE = {
    "id": "signed",
    "type": "alertmanager",
    "hmac_secret": HMAC_KEY,
    "hmac_header": "X-Signature",
}


def audited(hook: Any, action: str) -> list[AuditEntry]:
    with hook.guard.db.session() as session:
        return list(session.exec(select(AuditEntry).where(AuditEntry.action == action)).all())


async def test_wrong_or_missing_token_is_401_and_audited_once_per_interval(home: GuardHome) -> None:
    lines: list[str] = []
    sink = logger.add(lines.append, level="DEBUG", format="{message}")
    try:
        async with serving(home, [am_source()]) as hook:
            body = am_payload(am_alert("InstanceDown", "api"))
            for token in ("wrong", TOKEN[:-1], TOKEN + "x", None):
                answer = await hook.post("am", body, token=token)
                assert answer.status_code == 401
            basic = await hook.post("am", body, token=None, Authorization=f"Basic {TOKEN}")
            assert basic.status_code == 401
            bare = await hook.post("am", body, token=None, Authorization="Bearer")
            assert bare.status_code == 401
            assert hook.incidents() == []
            [entry] = audited(hook, "intake.unauthorized")  # six refusals, one entry
            assert entry.subject == "intake:am" and entry.data["refused"] == 1
            refused = [line for line in lines if "refused" in line]
            assert len(refused) == 1  # the log too: once per interval
    finally:
        logger.remove(sink)


async def test_the_token_never_reaches_logs_or_incidents(home: GuardHome) -> None:
    lines: list[str] = []
    sink = logger.add(lines.append, level="DEBUG", format="{message} {extra}")
    try:
        async with serving(home, [am_source()]) as hook:
            leaky = am_alert("Leak", "api")
            leaky["annotations"]["summary"] = f"curl -H 'Authorization: Bearer {TOKEN}' failed"
            assert (await hook.post("am", am_payload(leaky))).status_code == 200
            await hook.post("am", am_payload(leaky), token=TOKEN + "-wrong")
            [incident] = hook.incidents()
            assert TOKEN not in incident.message and TOKEN not in json.dumps(incident.details)
    finally:
        logger.remove(sink)
    assert lines and not [line for line in lines if TOKEN in line]


async def test_hmac_signature_with_or_without_prefix(home: GuardHome) -> None:
    async with serving(home, [HMAC_SOURCE]) as hook:
        raw = json.dumps(am_payload(am_alert("A", "x"))).encode()
        signed = await hook.post("signed", raw, token=None, **{"X-Signature": signature(raw)})
        assert signed.status_code == 200
        raw2 = json.dumps(am_payload(am_alert("B", "x"))).encode()
        prefixed = {"X-Signature": "sha256=" + signature(raw2)}
        assert (await hook.post("signed", raw2, token=None, **prefixed)).status_code == 200
        forged = {"X-Signature": signature(raw2, key="not-the-key")}
        assert (await hook.post("signed", raw2, token=None, **forged)).status_code == 401
        assert (await hook.post("signed", raw2, token=None)).status_code == 401
        tampered = raw.replace(b'"A"', b'"C"')
        resent = {"X-Signature": signature(raw)}  # the signature of another body
        assert (await hook.post("signed", tampered, token=None, **resent)).status_code == 401
        assert sorted(i.kind for i in hook.incidents()) == ["A", "B"]


async def test_oversized_bodies_get_413_without_being_read(home: GuardHome) -> None:
    async with serving(home, [am_source()]) as hook:
        big = b'{"alerts": [' + b" " * (1024 * 1024) + b"]}"
        assert (await hook.post("am", big)).status_code == 413  # by its Content-Length

        async def chunks() -> AsyncIterator[bytes]:  # no length: counted as it comes
            for _ in range(64):
                yield b" " * 65536

        headers = {"Authorization": f"Bearer {TOKEN}"}
        answer = await hook.client.post("/hooks/am", content=chunks(), headers=headers)
        assert answer.status_code == 413
        assert answer.json() == {"error": "body: over 1048576 bytes"}


async def test_malformed_bodies_get_400_naming_the_field(home: GuardHome) -> None:
    async with serving(home, [am_source()]) as hook:
        cases: list[tuple[Any, str]] = [
            (b"{not json", "body: not JSON"),
            ([1, 2], "body: expected a JSON object"),
            ({"version": "4"}, "alerts: field required"),
            ({"version": "4", "alerts": {}}, "alerts: not a list"),
            ({"version": "3", "alerts": []}, "version: expected 4"),
            (
                am_payload(am_alert("A", "x"), {"status": "firing"}),
                "alerts[1].labels: field required",
            ),
            (am_payload({**am_alert("A", "x"), "status": "pending"}), "alerts[0].status:"),
        ]
        for body, error in cases:
            answer = await hook.post("am", body)
            assert answer.status_code == 400, body
            assert answer.json()["error"].startswith(error)
        assert hook.incidents() == []  # a bad alert in a group stores none of it


async def test_unknown_hook_is_404_and_only_post_is_allowed(home: GuardHome) -> None:
    async with serving(home, [am_source()]) as hook:
        unknown = metrics.INTAKE_REQUESTS.labels("unknown", "404")
        before = unknown._value.get()
        assert (await hook.post("nope", am_payload())).status_code == 404
        assert (await hook.post("nope2", am_payload())).status_code == 404
        assert unknown._value.get() == before + 2  # ids not configured: one label value
        assert (await hook.client.get("/hooks/am")).status_code == 405
        assert (await hook.client.put("/hooks/am", content=b"{}")).status_code == 405
        text = (await hook.client.get("/metrics")).text
        assert 'guard_intake_requests_total{code="404",source="unknown"}' in text


async def test_past_the_rate_429_and_every_acknowledged_alert_is_stored(home: GuardHome) -> None:
    async with serving(home, [am_source(rate="1/m", burst=3)]) as hook:
        answers = [await hook.post("am", am_payload(am_alert("Flood", f"n{i}"))) for i in range(10)]
        statuses = [a.status_code for a in answers]
        assert statuses[:3] == [200, 200, 200] and set(statuses[3:]) == {429}
        assert answers[5].headers["Retry-After"] == "1"
        stored = {i.target for i in hook.incidents()}
        assert stored == {f"n{i}" for i, s in enumerate(statuses) if s == 200}


async def test_2xx_only_once_stored_503_while_the_store_refuses(home: GuardHome) -> None:
    async with serving(home, [am_source()]) as hook:
        hook.web.hooks.store_wait = 1.0
        process = hook.guard.triage.process
        refusing = [True]

        def flaky(observations: Any, **kw: Any) -> Any:
            if refusing[0]:
                raise OperationalError("INSERT", {}, Exception("database is locked"))
            return process(observations, **kw)

        hook.guard.triage.process = flaky  # type: ignore[method-assign]
        payload = am_payload(am_alert("InstanceDown", "api"), am_alert("DiskFull", "api"))
        answer = await hook.post("am", payload)
        assert answer.status_code == 503 and answer.headers["Retry-After"] == "5"
        assert hook.incidents() == []
        refusing[0] = False  # the store is back; the intake's own retry stores the batch
        for _ in range(200):
            if len(hook.incidents()) == 2:
                break
            await asyncio.sleep(0.1)
        answer = await hook.post("am", payload)  # the sender's retry: a redelivery
        assert answer.status_code == 200
        assert sorted((i.kind, i.count) for i in hook.incidents()) == [
            ("DiskFull", 1),
            ("InstanceDown", 1),
        ]


async def test_a_standby_answers_503(home: GuardHome) -> None:
    async with serving(home, [am_source()]) as hook:
        hook.guard.intake.consuming = False  # what a replica that does not lead has
        answer = await hook.post("am", am_payload(am_alert("A", "x")))
        assert answer.status_code == 503


@pytest.mark.unit
def test_the_rate_counts_alerts_and_a_large_group_still_passes() -> None:
    now = [0.0]
    limit = RateLimit(rate=10.0, burst=20, clock=lambda: now[0])
    assert limit.allow()
    limit.charge(100)  # one notification of 100 alerts: let in, the bucket is in debt
    assert not limit.allow()
    now[0] += 8.0  # 80 refilled: still 1 short of a token
    assert not limit.allow()
    now[0] += 0.2
    assert limit.allow()
    now[0] += 1000.0  # never more than the burst
    assert sum(limit.allow() for _ in range(30)) == 20
