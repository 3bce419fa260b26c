"""store.retention: old resolved incidents go with what hangs on them; the audit cut is anchored."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from sqlmodel import col, select

from guard.domain.exceptions import AuditChainBroken
from guard.domain.records import utcnow
from guard.store import audit
from guard.store.edits import EditTarget, PostedAs
from guard.store.models import (
    AgentStep,
    Approval,
    AuditEntry,
    ConversationMessage,
    Incident,
    IncidentTimeline,
    MonitorState,
    OutboxMessage,
    RemediationRun,
)
from guard.store.retention import prune
from tests.conftest import GuardHome
from tests.helpers.agent import stored_incident

DAY = 86400.0


def _incident_with_history(session: Any, state: str, resolved_days_ago: float | None) -> int:
    inc = stored_incident(session, state)
    if resolved_days_ago is not None:
        inc.resolved_at = utcnow() - timedelta(days=resolved_days_ago)
    session.add(IncidentTimeline(incident_id=inc.id, type="opened", message="down"))
    run = RemediationRun(incident_id=inc.id, skill="s", target="t")
    session.add(run)
    session.flush()
    assert run.id is not None
    session.add(AgentStep(incident_id=inc.id, run_id=run.id, index=0, kind="run"))
    session.add(Approval(id=f"a{inc.id}", incident_id=inc.id, kind="skill", expires_at=utcnow()))
    session.add(
        ConversationMessage(
            chat="console", direction="out", author="guard", text="asked", incident_id=inc.id
        )
    )
    audit.append(session, actor="triage", action="incident.opened", subject=f"#{inc.id}")
    return int(inc.id)


def test_prune_removes_old_resolved_incidents_and_anchors_the_audit_cut(home: GuardHome) -> None:
    db = home.database()
    anchors = home.root / "data" / audit.ANCHORS
    with db.session() as s:
        _incident_with_history(s, "resolved", 100)  # old: goes
        recent = _incident_with_history(s, "resolved", 10)
        still_open = _incident_with_history(s, "open", None)
    with db.session() as s:
        seqs = [e.seq for e in s.exec(select(AuditEntry))]

    # A day from now with 95 days' retention: "old" (100 days) goes, "recent" (10) stays.
    done = prune(db, 95 * DAY, anchors, now=utcnow() + timedelta(days=1))
    with db.session() as s:
        left = {i.id for i in s.exec(select(Incident))}
        timeline = {t.incident_id for t in s.exec(select(IncidentTimeline))}
        runs = {r.incident_id for r in s.exec(select(RemediationRun))}
        steps = {a.incident_id for a in s.exec(select(AgentStep))}
        approvals = {a.incident_id for a in s.exec(select(Approval))}
        talk = {c.incident_id for c in s.exec(select(ConversationMessage))}
    assert left == {recent, still_open}
    for rows in (timeline, runs, steps, approvals, talk):
        assert rows == {recent, still_open}
    assert done.rows["incident"] == 1 and done.rows["incident_timeline"] == 1
    assert done.audit_cut is None  # every audit entry is younger than 95 days

    done = prune(db, 0.5 * DAY, anchors, now=utcnow() + timedelta(days=1))
    assert done.audit_cut == seqs[-1]  # all but the newest (the first prune's store.pruned)
    lines = [json.loads(x) for x in anchors.read_text().splitlines()]
    assert lines[-1]["cut"] is True and lines[-1]["seq"] == done.audit_cut
    with db.session() as s:
        remaining = list(s.exec(select(AuditEntry).order_by(col(AuditEntry.seq))))
        # the newest entry stays, then the anchor that covers the cut and the cut's record
        assert [e.action for e in remaining] == [
            "store.pruned",
            "audit.anchored",
            "audit.cut",
            "store.pruned",
        ]
        assert remaining[2].data["seq"] == done.audit_cut  # the cut is in the chain
        assert "audit_log" in remaining[3].data["rows"]
        assert audit.verify(s, audit.read_anchors(anchors), file_lines=2) == 4
        with pytest.raises(AuditChainBroken, match="missing or reordered"):
            audit.verify(s)  # without the cut anchor, the pruned entries are missing
        s.delete(remaining[0])  # a gap after the cut is still found
    with db.session() as s, pytest.raises(AuditChainBroken, match="missing or reordered"):
        audit.verify(s, audit.read_anchors(anchors))


def test_store_stats_and_prune_on_the_command_line(home: GuardHome) -> None:
    db = home.database()
    with db.session() as s:
        _incident_with_history(s, "resolved", 100)
        _incident_with_history(s, "open", None)
    stats = json.loads(home.cli("store", "stats", "--json").stdout)
    assert stats["tables"]["incident"]["rows"] == 2 and stats["bytes"] > 0
    assert stats["retention"] == "90d"
    out = home.cli("store", "prune").stdout
    assert "1 incident" in out and "1 incident_timeline" in out
    stats = json.loads(home.cli("store", "stats", "--json").stdout)
    assert stats["tables"]["incident"]["rows"] == 1
    assert home.cli("audit", "verify").returncode == 0


@pytest.mark.unit
def test_prune_removes_old_intake_check_states_only(home: GuardHome) -> None:
    db = home.database()
    old = utcnow() - timedelta(days=100)
    keys = {
        "check:intake:am|api|alert:aa": old,  # an alert last seen 100 days ago: goes
        "check:intake:am|api|alert:bb": utcnow(),  # recent: stays
        "check:web|http://api": old,  # a monitor's check: stays, however old
        "monitor:log": old,
    }
    with db.session() as s:
        for key, at in keys.items():
            s.add(MonitorState(key=key, value={"failures": 0}, updated_at=at))
    done = prune(db, 95 * DAY, home.root / "data" / audit.ANCHORS)
    with db.session() as s:
        left = {m.key for m in s.exec(select(MonitorState))} & set(keys)
    assert left == set(keys) - {"check:intake:am|api|alert:aa"}
    assert done.rows["monitor_state"] == 1


def test_prune_removes_the_edit_targets_of_the_outbox_rows_it_removes(home: GuardHome) -> None:
    db = home.database()
    kept: dict[int, int] = {}
    with db.session() as s:
        for days in (100, 10):  # the old incident's rows go, the recent one's stay
            inc = _incident_with_history(s, "resolved", days)
            post = OutboxMessage(method="send", chat_id="c", incident_id=inc, role="incident")
            edit = OutboxMessage(method="edit", chat_id="c", incident_id=inc, role="incident")
            s.add_all([post, edit])
            s.flush()
            assert post.id is not None and edit.id is not None
            s.add(PostedAs(outbox_id=post.id, message=inc))
            s.add(EditTarget(outbox_id=edit.id, post=post.id))
            kept[post.id], kept[edit.id] = days, days
    done = prune(db, 95 * DAY, home.root / "data" / audit.ANCHORS, now=utcnow())
    with db.session() as s:
        left = [kept[r.outbox_id] for r in s.exec(select(EditTarget))]
        left += [kept[r.outbox_id] for r in s.exec(select(PostedAs))]
    assert left == [10, 10]
    assert done.rows["outbox_edit_target"] == 1 and done.rows["outbox_posted_as"] == 1
