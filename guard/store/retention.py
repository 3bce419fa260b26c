"""Bounded data: ``store.retention`` prunes what is resolved and old, and says so in the audit.

What goes, once it is older than the retention (``store.retention``, default 90 days):

- resolved incidents (by ``resolved_at``) with every row that hangs on them: timeline, agent
  steps, remediation runs, approvals, human commands, conversation, channel messages, group
  members, outbox rows (and their edit targets) and related signals (signals are not stored
  one by one: they are the incidents' counts and timelines);
- conversation and outbox rows of no incident;
- the check states of intake alerts (``check:intake:*``, one per alert) not touched since;
- audit entries, but never silently: the head is anchored, then the cut is recorded as an
  ``audit.cut`` entry (keyed under ``audit.key``) and a cut line ``{"seq", "hash", "at", "cut":
  true, ...}`` in ``audit-anchors.jsonl`` (fsynced before any row goes), and a ``store.pruned``
  entry with the counts stays in the chain; ``guard audit verify`` then checks the chain from
  the cut on, and only a cut recorded this way (``guard.store.audit``).

Log templates stay: their ids are part of fingerprints and the running miner keeps them, and
there are as many as there are distinct events, not as many as lines.

Deletes run in batches of ``BATCH`` incidents, one transaction each, so ``guard run``'s writer
never waits long for SQLite's lock.

Tested by ``tests/store/test_store_retention.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import delete, func, text
from sqlmodel import Session, col, select

from guard.domain.records import utcnow
from guard.store import audit
from guard.store.correlation import RelatedSignal
from guard.store.db import Database
from guard.store.edits import EditTarget, PostedAs
from guard.store.escalation import EscalationFired, IncidentAck, QuietHeld
from guard.store.holds import Hold
from guard.store.models import (
    AgentStep,
    Approval,
    AuditEntry,
    ChannelMessage,
    ConversationMessage,
    HumanCommand,
    Incident,
    IncidentState,
    IncidentTimeline,
    MessageGroupMember,
    MonitorState,
    OutboxMessage,
    RemediationRun,
)
from guard.store.paging import PageOutbox

BATCH = 1000
# Rows tied to an incident, children first (foreign keys).
_BY_INCIDENT: tuple[Any, ...] = (
    IncidentTimeline,
    RelatedSignal,
    Hold,
    AgentStep,
    Approval,
    HumanCommand,
    RemediationRun,
    ConversationMessage,
    ChannelMessage,
    MessageGroupMember,
    OutboxMessage,
    PageOutbox,
    IncidentAck,
    EscalationFired,
    QuietHeld,
)


@dataclass
class Pruned:
    """What one prune removed, by table."""

    cutoff: datetime
    rows: dict[str, int] = field(default_factory=dict)
    audit_cut: int | None = None  # the last audit seq removed

    def add(self, table: str, n: int) -> None:
        if n:
            self.rows[table] = self.rows.get(table, 0) + n


def _delete(session: Session, model: Any, *where: Any) -> int:
    result = session.execute(delete(model).where(*where))
    return int(getattr(result, "rowcount", 0) or 0)


def prune(
    db: Database,
    retention: float,
    anchors: Path,
    *,
    now: datetime | None = None,
    actor: str = "guard",
) -> Pruned:
    """Remove what is older than ``retention`` seconds (see the module's docstring)."""
    cutoff = (now or utcnow()) - timedelta(seconds=retention)
    done = Pruned(cutoff)
    while True:
        with db.session() as session:
            ids = list(
                session.exec(
                    select(Incident.id)
                    .where(
                        Incident.state == IncidentState.resolved.value,
                        col(Incident.resolved_at) < cutoff,
                    )
                    .order_by(col(Incident.id))
                    .limit(BATCH)
                ).all()
            )
            if not ids:
                break
            for model in _BY_INCIDENT:
                done.add(
                    model.__tablename__, _delete(session, model, col(model.incident_id).in_(ids))
                )
            done.add("incident", _delete(session, Incident, col(Incident.id).in_(ids)))
    with db.session() as session:
        done.add(
            "conversation",
            _delete(
                session,
                ConversationMessage,
                col(ConversationMessage.incident_id).is_(None),
                col(ConversationMessage.at) < cutoff,
            ),
        )
        done.add(
            "outbox",
            _delete(
                session,
                OutboxMessage,
                col(OutboxMessage.incident_id).is_(None),
                col(OutboxMessage.status).not_in(("pending", "in_flight")),
                col(OutboxMessage.created_at) < cutoff,
            ),
        )
        for model in (EditTarget, PostedAs):  # an outbox row's edit target goes with the row
            gone = col(model.outbox_id).not_in(select(OutboxMessage.id))
            done.add(model.__tablename__, _delete(session, model, gone))
        done.add(
            "monitor_state",
            _delete(
                session,
                MonitorState,
                col(MonitorState.key).startswith("check:intake:"),
                col(MonitorState.updated_at) < cutoff,
            ),
        )
    _cut_audit(db, cutoff, anchors, done, actor)
    if not done.rows:
        return done
    with db.session() as session:
        audit.append(
            session,
            actor=actor,
            action="store.pruned",
            subject="store",
            data={"cutoff": cutoff.isoformat(), "rows": done.rows, "audit_cut": done.audit_cut},
        )
    return done


def _cut_audit(db: Database, cutoff: datetime, anchors: Path, done: Pruned, actor: str) -> None:
    """Remove audit entries older than ``cutoff``, after anchoring the head (which covers the
    cut) and recording the cut. The newest entry always stays, so the next one links to it."""
    with db.session() as session:
        head, _ = audit.head(session)
        last = session.exec(
            select(AuditEntry)
            .where(col(AuditEntry.at) < cutoff, col(AuditEntry.seq) < head)
            .order_by(col(AuditEntry.seq).desc())
            .limit(1)
        ).first()
    if last is None:
        return
    audit.anchor(db, anchors, actor)
    audit.record_cut(db, anchors, last.seq, last.hash, actor)  # on disk before a row goes
    with db.session() as session:
        done.add("audit_log", _delete(session, AuditEntry, col(AuditEntry.seq) <= last.seq))
    done.audit_cut = last.seq


# -- sizes ----------------------------------------------------------------------------------------


def stats(db: Database) -> dict[str, Any]:
    """Rows per table and bytes on disk (the database file(s), or Postgres' relation sizes)."""
    from sqlmodel import SQLModel

    tables: dict[str, dict[str, int | None]] = {}
    with db.session() as session:
        dialect = session.get_bind().dialect.name
        for table in SQLModel.metadata.sorted_tables:
            rows = session.execute(select(func.count()).select_from(table)).scalar_one()
            size = None
            if dialect == "postgresql":
                size = session.execute(
                    text("SELECT pg_total_relation_size(:t)"), {"t": table.name}
                ).scalar_one()
            tables[table.name] = {"rows": int(rows), "bytes": size}
        oldest = session.exec(select(func.min(Incident.opened_at))).one()
    total: int | None = None
    url = db.engine.url
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        files = [Path(url.database + s) for s in ("", "-wal", "-shm")]
        total = sum(f.stat().st_size for f in files if f.exists())
    elif all(t["bytes"] is not None for t in tables.values()):
        total = sum(int(t["bytes"] or 0) for t in tables.values())
    return {
        "backend": url.get_backend_name(),
        "bytes": total,
        "tables": tables,
        "oldest_incident": oldest.isoformat() if oldest else None,
    }
