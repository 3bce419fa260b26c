"""The page outbox and its worker against a local PagerDuty Events API v2 server and a local
webhook receiver that checks Guard's signature: idempotent queueing, order per target, retries
with backoff, refusals for good, resolves with the trigger's dedup_key, fencing."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import col, select

from guard import cluster
from guard.config import Settings
from guard.domain.exceptions import NotLeader
from guard.domain.records import IncidentState, utcnow
from guard.notify.pagers import dedup_key, enqueue_pages, triggered_targets
from guard.notify.pagers.worker import PageWorker, backoff
from guard.store.db import Database, open_database
from guard.store.models import AuditEntry, Incident
from guard.store.paging import PageOutbox
from guard.telemetry import metrics
from tests.fakes.pagerduty import ROUTING_KEY, PagerDutyServer
from tests.fakes.webhook_receiver import SECRET, WebhookReceiver, receiving
from tests.helpers.agent import stored_incident


def make_settings(
    tmp_path: Path, pd: PagerDutyServer | None, hook: WebhookReceiver | None
) -> Settings:
    notifiers: dict[str, Any] = {}
    if pd is not None:
        notifiers["pagerduty"] = {"primary": {"routing_key": ROUTING_KEY, "url": pd.url}}
    if hook is not None:
        notifiers["webhook"] = {"ops": {"url": hook.url, "hmac_secret": SECRET}}
    return Settings(data_dir=tmp_path, notifiers=notifiers)


def new_db(tmp_path: Path) -> Database:
    return open_database(f"sqlite:///{tmp_path / 'guard.db'}")


def incident(db: Database, **fields: Any) -> Incident:
    with db.session() as session:
        return stored_incident(session, state="awaiting_human", **fields)


def idof(inc: Incident) -> int:
    assert inc.id is not None
    return inc.id


def page(db: Database, targets: list[str], inc: Incident, action: str, key: str) -> list[int]:
    with db.session() as session:
        return enqueue_pages(session, targets, inc, action, key=key, reason="test")  # type: ignore[arg-type]


def rows(db: Database) -> list[PageOutbox]:
    with db.session() as session:
        return list(session.exec(select(PageOutbox).order_by(col(PageOutbox.id))).all())


def work_until(worker: PageWorker, done: Callable[[], bool], within: float = 60.0) -> None:
    """Run the worker until ``done()`` (checked off the loop), then stop it."""

    async def main() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(worker.run(stop))
        try:
            deadline = asyncio.get_running_loop().time() + within
            while not await asyncio.to_thread(done):
                assert not task.done(), task.exception() if task.done() else ""
                assert asyncio.get_running_loop().time() < deadline, "worker did not finish"
                await asyncio.sleep(0.1)
        finally:
            stop.set()
            await task

    asyncio.run(main())


def counted(kind: str, action: str, outcome: str) -> float:
    """``guard_pages_total`` for these labels, as /metrics serves it."""
    labels = {"kind": kind, "action": action, "outcome": outcome}
    return metrics.REGISTRY.get_sample_value("guard_pages_total", labels) or 0.0


def settled(db: Database) -> Callable[[], bool]:
    return lambda: all(r.status != "pending" for r in rows(db))


@pytest.mark.unit
def test_enqueue_is_idempotent_per_target_and_key_and_tracks_open_pages(tmp_path: Path) -> None:
    db = new_db(tmp_path)
    inc = incident(db)
    first = page(
        db, ["pagerduty:primary", "webhook:ops", "pagerduty:primary"], inc, "trigger", "route:1:0"
    )
    assert len(first) == 2  # a target named twice is paged once
    assert page(db, ["pagerduty:primary", "webhook:ops"], inc, "trigger", "route:1:0") == []
    assert len(page(db, ["pagerduty:primary"], inc, "trigger", "escalation:1:0")) == 1
    with db.session() as session:
        assert triggered_targets(session, idof(inc)) == ["pagerduty:primary", "webhook:ops"]
    page(db, ["pagerduty:primary"], inc, "resolve", "resolve:1:0")
    with db.session() as session:
        assert triggered_targets(session, idof(inc)) == ["webhook:ops"]
    assert len({r.delivery for r in rows(db)}) == 4  # one delivery id per row
    with pytest.raises(ValueError, match="unknown page action"):
        page(db, ["webhook:ops"], inc, "page", "x")  # type: ignore[arg-type]


@pytest.mark.unit
def test_backoff_doubles_up_to_a_cap() -> None:
    assert [backoff(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 8.0]
    assert backoff(40) == 300.0


def test_trigger_then_resolve_reach_pagerduty_with_one_dedup_key(
    tmp_path: Path, pd: PagerDutyServer
) -> None:
    db = new_db(tmp_path)
    worker = PageWorker(make_settings(tmp_path, pd, None), db)
    inc = incident(db, title="shop down", details={"service": "shop"})
    page(db, ["pagerduty:primary"], inc, "trigger", "route:1:0")
    work_until(worker, lambda: len(pd.events) == 1)
    trigger = pd.events[0]
    assert trigger["dedup_key"] == dedup_key(idof(inc)) == f"guard-incident-{inc.id}"
    assert trigger["payload"]["severity"] == "critical"
    assert "shop down" in trigger["payload"]["summary"]
    assert trigger["payload"]["custom_details"]["service"] == "shop"
    # resolved however it was: the worker queues the resolve to the open page
    with db.session() as session:
        fresh = session.get(Incident, inc.id)
        assert fresh is not None
        fresh.state, fresh.resolved_at = IncidentState.resolved, utcnow()
        session.add(fresh)
    work_until(worker, lambda: len(pd.events) == 2)
    assert pd.actions(dedup_key(idof(inc))) == ["trigger", "resolve"]
    assert pd.events[1] == {**pd.events[1], "routing_key": ROUTING_KEY, "event_action": "resolve"}
    assert [(a["state"], a["log"]) for a in pd.alerts] == [("resolved", ["trigger", "resolve"])]
    with db.session() as session:
        assert triggered_targets(session, idof(inc)) == []
    assert worker.resolve_finished() == 0  # nothing open any more: no second resolve
    assert [r.status for r in rows(db)] == ["sent", "sent"]
    # a late trigger (an escalation step racing the resolution) is resolved too
    page(db, ["pagerduty:primary"], inc, "trigger", "escalation:1:0")
    work_until(worker, lambda: len(pd.events) == 4)
    assert pd.actions(dedup_key(idof(inc))) == ["trigger", "resolve", "trigger", "resolve"]
    assert [a["state"] for a in pd.alerts] == ["resolved", "resolved"]


def test_a_webhook_500_is_retried_with_backoff_and_delivered_once(
    tmp_path: Path, hook: WebhookReceiver
) -> None:
    db = new_db(tmp_path)
    worker = PageWorker(make_settings(tmp_path, None, hook), db, first_backoff=1.0)
    inc = incident(db, title="api 502", severity="error")
    hook.fail(500)
    page(db, ["webhook:ops"], inc, "trigger", "route:1:0")
    before = {o: counted("webhook", "trigger", o) for o in ("retried", "sent")}
    work_until(worker, settled(db))
    assert counted("webhook", "trigger", "retried") == before["retried"] + 1
    assert counted("webhook", "trigger", "sent") == before["sent"] + 1
    assert [r.get("status") for r in hook.requests] == [500, 200]
    first, second = hook.requests
    assert first["delivery"] == second["delivery"] == rows(db)[0].delivery  # same id each try
    assert second["at"] - first["at"] >= 1.0  # waited out the backoff, not a busy retry
    (body,) = hook.processed.values()
    assert body["action"] == "trigger" and body["target"] == "webhook:ops"
    assert body["incident"]["id"] == inc.id and body["incident"]["severity"] == "error"
    assert body["incident"]["title"] == "api 502"
    (row,) = rows(db)
    assert (row.status, row.attempts) == ("sent", 2)


def test_a_refusal_fails_for_good_and_the_target_moves_on(
    tmp_path: Path, pd: PagerDutyServer
) -> None:
    db = new_db(tmp_path)
    worker = PageWorker(make_settings(tmp_path, pd, None), db, first_backoff=0.2)
    one, two = incident(db, title="one"), incident(db, title="two")
    pd.fail(400)
    page(db, ["pagerduty:primary"], one, "trigger", "route:a")
    page(db, ["pagerduty:primary"], two, "trigger", "route:b")
    work_until(worker, settled(db))
    first, second = rows(db)
    assert (first.status, first.attempts) == ("failed", 1)
    assert "400" in first.error and "invalid event" in first.error
    assert second.status == "sent" and [e["dedup_key"] for e in pd.events] == [dedup_key(idof(two))]
    (entry,) = audited(db, "page.refused")  # nobody was paged: the audit says so
    assert entry.subject == f"incident:{idof(one)}" and "invalid event" in entry.data["error"]


def test_rate_limits_are_waited_out_in_order(tmp_path: Path, pd: PagerDutyServer) -> None:
    db = new_db(tmp_path)
    worker = PageWorker(make_settings(tmp_path, pd, None), db, first_backoff=0.2)
    inc = incident(db)
    pd.fail(429, times=2)
    page(db, ["pagerduty:primary"], inc, "trigger", "route:1")
    page(db, ["pagerduty:primary"], inc, "acknowledge", "ack:1")
    work_until(worker, settled(db))
    assert [r["status"] for r in pd.requests] == [429, 429, 202, 202]
    assert pd.actions(dedup_key(idof(inc))) == ["trigger", "acknowledge"]  # the order kept
    assert pd.alerts[0]["state"] == "acknowledged"


def test_a_target_no_longer_configured_is_dropped_not_retried(
    tmp_path: Path, pd: PagerDutyServer
) -> None:
    db = new_db(tmp_path)
    worker = PageWorker(make_settings(tmp_path, pd, None), db)
    inc = incident(db)
    page(db, ["webhook:gone", "pagerduty:primary"], inc, "trigger", "route:1")
    work_until(worker, settled(db))
    by_target = {r.target: r for r in rows(db)}
    assert by_target["webhook:gone"].status == "failed"
    assert by_target["pagerduty:primary"].status == "sent"
    (entry,) = audited(db, "page.dropped")
    assert entry.data["target"] == "webhook:gone" and entry.subject == f"incident:{idof(inc)}"


def audited(db: Database, action: str) -> list[AuditEntry]:
    with db.session() as session:
        return list(session.exec(select(AuditEntry).where(AuditEntry.action == action)).all())


class Deposed:
    ha = True

    def claim(self, session: Any, kind: str, ref: object) -> int:
        raise NotLeader("replica x is not the leader (deposed)")

    fence = claim


def test_a_deposed_replica_sends_nothing(tmp_path: Path, pd: PagerDutyServer) -> None:
    db = new_db(tmp_path)
    inc = incident(db)
    page(db, ["pagerduty:primary"], inc, "trigger", "route:1")
    worker = PageWorker(make_settings(tmp_path, pd, None), db)
    previous = cluster.current()
    cluster.install(Deposed())  # type: ignore[arg-type]
    try:

        async def main() -> None:
            await asyncio.wait_for(worker.run(asyncio.Event()), 60)  # returns by itself

        asyncio.run(main())
    finally:
        cluster.install(previous)
    assert pd.requests == [] and rows(db)[0].status == "pending"


def test_the_webhook_signature_verifies_only_with_the_secret(tmp_path: Path) -> None:
    with receiving(secret="another-secret-entirely") as wrong:
        db = new_db(tmp_path)
        worker = PageWorker(
            Settings(
                data_dir=tmp_path,
                notifiers={"webhook": {"ops": {"url": wrong.url, "hmac_secret": SECRET}}},
            ),
            db,
        )
        page(db, ["webhook:ops"], incident(db), "trigger", "route:1")
        work_until(worker, lambda: bool(wrong.requests))
        assert wrong.requests[0]["refused"] == "bad signature" and wrong.processed == {}
        raw = wrong.requests[0]["raw"]
        assert json.loads(raw)["incident"]["title"] == "down"
        assert SECRET.encode() not in raw


@pytest.mark.unit
def test_pruning_a_resolved_incident_removes_its_pages(tmp_path: Path) -> None:
    from datetime import timedelta

    from guard.store.retention import prune

    db = new_db(tmp_path)
    old = incident(db)
    kept = incident(db)
    page(db, ["webhook:ops"], old, "trigger", "route:old")
    page(db, ["webhook:ops"], kept, "trigger", "route:kept")
    with db.session() as session:
        row = session.get(Incident, old.id)
        assert row is not None
        row.state, row.resolved_at = IncidentState.resolved, utcnow() - timedelta(days=100)
        session.add(row)
    done = prune(db, timedelta(days=90).total_seconds(), tmp_path / "anchors.jsonl")
    assert done.rows.get("page_outbox") == 1
    assert [r.incident_id for r in rows(db)] == [kept.id]


def test_an_unforeseen_failure_is_retried_not_the_end_of_the_worker(
    tmp_path: Path, hook: WebhookReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    from guard.notify.pagers import webhook

    real, calls = webhook.send, []

    async def flaky(*args: Any) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("a bug")
        await real(*args)

    monkeypatch.setattr(webhook, "send", flaky)
    db = new_db(tmp_path)
    worker = PageWorker(make_settings(tmp_path, None, hook), db, first_backoff=0.1)
    page(db, ["webhook:ops"], incident(db), "trigger", "route:1")
    work_until(worker, settled(db))
    (row,) = rows(db)
    assert (row.status, row.attempts, len(calls)) == ("sent", 2, 2)
    assert len(hook.processed) == 1


def test_a_secret_in_an_incident_never_reaches_a_pager(tmp_path: Path, pd: PagerDutyServer) -> None:
    from guard.redact import configure

    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a GitHub token's shape
    s = make_settings(tmp_path, pd, None)
    configure(s)
    db = new_db(tmp_path)
    inc = incident(db, title=f"login failed with {token}", message=f"token={token} rejected")
    page(db, ["pagerduty:primary"], inc, "trigger", "route:1")
    work_until(PageWorker(s, db), lambda: len(pd.events) == 1)
    raw = pd.requests[0]["raw"].decode()
    assert token not in raw and "login failed with" in raw
