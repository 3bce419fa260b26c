"""How pages end: a muted incident's open pages are resolved, a retryable page gives up after
the notifier's ``give_up_after``, and ``PageWorker.drain`` (``guard run --once``) delivers what
is due and returns: against the local PagerDuty server and webhook receiver."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from loguru import logger

from guard.config import Settings, load_settings
from guard.domain.exceptions import ConfigError
from guard.domain.records import IncidentState, utcnow
from guard.notify.pagers import dedup_key, triggered_targets
from guard.notify.pagers.worker import PageWorker
from guard.store.db import Database
from guard.store.models import Incident
from guard.store.paging import PageOutbox
from tests.fakes.pagerduty import ROUTING_KEY, PagerDutyServer
from tests.fakes.webhook_receiver import SECRET, WebhookReceiver
from tests.notify.test_pages import (
    audited,
    counted,
    idof,
    incident,
    make_settings,
    new_db,
    page,
    rows,
    settled,
    work_until,
)


def set_state(db: Database, inc: Incident, state: IncidentState) -> None:
    with db.session() as session:
        fresh = session.get(Incident, inc.id)
        assert fresh is not None
        fresh.state = state
        session.add(fresh)


def with_give_up(settings: Settings, seconds: float) -> Settings:
    for p in settings.notifiers.pagerduty.values():
        p.give_up_after = seconds
    for w in settings.notifiers.webhook.values():
        w.give_up_after = seconds
    return settings


def logged(level: str, run: Callable[[], object]) -> list[str]:
    """What ``run()`` logged at ``level`` or above."""
    lines: list[str] = []
    sink = logger.add(lines.append, level=level, format="{message}")
    try:
        run()
    finally:
        logger.remove(sink)
    return lines


# -- a muted incident's pages -------------------------------------------------------------------


def test_a_muted_incidents_open_page_is_resolved_and_an_escalated_ones_is_not(
    tmp_path: Path, pd: PagerDutyServer
) -> None:
    db = new_db(tmp_path)
    worker = PageWorker(make_settings(tmp_path, pd, None), db)
    muted, escalated = incident(db, title="muted one"), incident(db, title="escalated one")
    page(db, ["pagerduty:primary"], muted, "trigger", "route:m")
    page(db, ["pagerduty:primary"], escalated, "trigger", "route:e")
    work_until(worker, lambda: len(pd.events) == 2)
    set_state(db, escalated, IncidentState.escalated)  # still waiting for a person: paged on
    assert worker.resolve_finished() == 0
    set_state(db, muted, IncidentState.muted)  # a person silenced it: nobody stays paged
    work_until(worker, lambda: len(pd.events) == 3)
    assert pd.actions(dedup_key(idof(muted))) == ["trigger", "resolve"]
    assert pd.actions(dedup_key(idof(escalated))) == ["trigger"]
    alerts = {a["dedup_key"]: a["state"] for a in pd.alerts}
    assert alerts == {dedup_key(idof(muted)): "resolved", dedup_key(idof(escalated)): "triggered"}
    resolve = rows(db)[-1]
    assert (resolve.action, resolve.reason, resolve.status) == ("resolve", "muted", "sent")
    with db.session() as session:
        assert triggered_targets(session, idof(muted)) == []
        assert triggered_targets(session, idof(escalated)) == ["pagerduty:primary"]
    assert worker.resolve_finished() == 0  # resolved once


# -- giving up -----------------------------------------------------------------------------------


@pytest.mark.unit
def test_give_up_after_is_a_duration_a_day_by_default_and_bad_values_name_the_field(
    tmp_path: Path,
) -> None:
    hook = {"url": "https://ops.example/hook", "hmac_secret": SECRET}
    pd = {"routing_key": ROUTING_KEY}
    path = tmp_path / "guard.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "notifiers": {
                    "pagerduty": {"p": {**pd, "give_up_after": "90m"}},
                    "webhook": {"w": hook},
                }
            }
        )
    )
    s = load_settings(path)
    assert s.notifiers.pagerduty["p"].give_up_after == 5400.0
    assert s.notifiers.webhook["w"].give_up_after == 86400.0
    path.write_text(
        yaml.safe_dump({"notifiers": {"webhook": {"w": {**hook, "give_up_after": "soon"}}}})
    )
    with pytest.raises(ConfigError) as err:
        load_settings(path)
    assert "notifiers.webhook.w.give_up_after" in str(err.value)
    assert "invalid duration" in str(err.value)


def test_a_page_still_failing_after_give_up_after_is_failed_logged_counted_and_audited(
    tmp_path: Path, hook: WebhookReceiver
) -> None:
    db = new_db(tmp_path)
    settings = with_give_up(make_settings(tmp_path, None, hook), 3600.0)
    worker = PageWorker(settings, db, first_backoff=0.1)
    inc = incident(db, title="api down")
    hook.fail(503, times=1000)
    (first,) = page(db, ["webhook:ops"], inc, "trigger", "route:1")
    before = {o: counted("webhook", "trigger", o) for o in ("retried", "failed")}
    work_until(worker, lambda: rows(db)[0].attempts >= 1)
    (row,) = rows(db)
    assert (row.status, row.attempts) == ("pending", 1)  # young: retried, not given up
    assert counted("webhook", "trigger", "retried") == before["retried"] + 1
    # the page has been failing for two hours now (queued then), and its next attempt is due
    with db.session() as session:
        old = session.get(PageOutbox, first)
        assert old is not None
        old.created_at, old.next_at = utcnow() - timedelta(hours=2), None
        session.add(old)
    (later,) = page(db, ["webhook:ops"], inc, "acknowledge", "ack:1")  # waits behind it
    errors = logged("ERROR", lambda: work_until(worker, lambda: rows(db)[0].status != "pending"))
    (row, ack) = rows(db)
    assert (row.status, row.attempts) == ("failed", 2)
    assert row.error == "gave up after 2h and 2 attempt(s): webhook:ops answered 503 (no body)"
    assert counted("webhook", "trigger", "failed") == before["failed"] + 1
    assert any(
        f"page {first} to webhook:ops (trigger for incident #{inc.id}) gave up" in e for e in errors
    )
    (entry,) = audited(db, "page.gave_up")
    assert (entry.actor, entry.subject) == ("guard", f"incident:{inc.id}")
    assert entry.data == {
        "page": first,
        "target": "webhook:ops",
        "action": "trigger",
        "attempts": 2,
        "error": row.error,
    }
    tries = [r["status"] for r in hook.requests if r["delivery"] == row.delivery]
    assert tries == [503, 503]  # two attempts, then no more
    # the target moves on: the acknowledge behind it is tried (and retried: it is young)
    assert ack.id == later
    work_until(worker, lambda: rows(db)[1].attempts >= 2)
    assert rows(db)[1].status == "pending" and len(audited(db, "page.gave_up")) == 1
    assert [r["status"] for r in hook.requests if r["delivery"] == row.delivery] == [503, 503]


# -- the drain of ``guard run --once`` ----------------------------------------------------------


def drain(worker: PageWorker, **kw: float) -> int:
    return asyncio.run(worker.drain(**kw))


def test_the_drain_delivers_everything_due_in_order_and_the_resolves_of_finished_incidents(
    tmp_path: Path, pd: PagerDutyServer, hook: WebhookReceiver
) -> None:
    db = new_db(tmp_path)
    worker = PageWorker(make_settings(tmp_path, pd, hook), db)
    inc = incident(db)
    page(db, ["pagerduty:primary", "webhook:ops"], inc, "trigger", "route:1:0")
    page(db, ["pagerduty:primary"], inc, "acknowledge", "ack:1:0")
    assert drain(worker) == 3  # two passes: the acknowledge waited behind its trigger
    assert pd.actions(dedup_key(idof(inc))) == ["trigger", "acknowledge"]
    assert [b["action"] for b in hook.processed.values()] == ["trigger"]
    assert settled(db)()
    assert drain(worker) == 0  # nothing left
    set_state(db, inc, IncidentState.resolved)
    assert drain(worker) == 2  # the resolves are queued and sent in the same drain
    assert pd.actions(dedup_key(idof(inc))) == ["trigger", "acknowledge", "resolve"]
    assert sorted(b["action"] for b in hook.processed.values()) == ["resolve", "trigger"]
    assert [r.status for r in rows(db)] == ["sent"] * 5


def test_the_drain_leaves_a_retry_for_the_next_run_and_is_bounded(
    tmp_path: Path, pd: PagerDutyServer, hook: WebhookReceiver
) -> None:
    db = new_db(tmp_path)
    worker = PageWorker(make_settings(tmp_path, pd, hook), db, first_backoff=600.0)
    inc = incident(db)
    hook.fail(503)
    page(db, ["pagerduty:primary", "webhook:ops"], inc, "trigger", "route:1:0")
    tried: list[int] = []
    warnings = logged("WARNING", lambda: tried.append(drain(worker)))
    assert tried == [2]  # one attempt each: the webhook's retry is 10 minutes away
    assert not any("were up" in w for w in warnings)  # it returned, it did not wait it out
    by_target = {r.target: r for r in rows(db)}
    assert by_target["pagerduty:primary"].status == "sent"
    retry = by_target["webhook:ops"]
    assert (retry.status, retry.attempts) == ("pending", 1) and retry.next_at is not None
    # a receiver that hangs: the drain stops at its bound, the page stays queued
    page(db, ["pagerduty:primary"], inc, "acknowledge", "ack:1:0")
    pd.stall_for(5.0)
    warnings = logged("WARNING", lambda: tried.append(drain(worker, within=0.5)))
    assert tried == [2, 0] and any("0.5s were up" in w for w in warnings)
    (ack,) = [r for r in rows(db) if r.action == "acknowledge"]
    assert ack.status == "pending"
