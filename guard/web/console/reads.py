"""What the console's pages read from the store: each a few indexed queries with a LIMIT, so a
page costs the same at a thousand incidents as at a hundred thousand."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from sqlmodel import Session, col, func, select

from guard.domain.records import IncidentState, utcnow
from guard.reports.counts import Counts, last_day
from guard.store import audit
from guard.store.correlation import RelatedSignal
from guard.store.db import Database
from guard.store.models import (
    Approval,
    AuditEntry,
    ChannelMessage,
    HumanCommand,
    Incident,
    IncidentTimeline,
    RemediationRun,
)
from guard.store.state import get_state
from guard.triage.related_groups import RelatedGroup, grouped

CLOSED = (IncidentState.resolved, IncidentState.muted)
OPEN = tuple(s for s in IncidentState if s not in CLOSED)
SEVERITIES = ("critical", "high", "warning", "medium", "low", "info")
LIST_LIMIT = 50  # open incidents on the overview
TIMELINE_LIMIT = 200  # newest timeline entries on an incident's page
AUDIT_LIMIT = 100


@dataclass(frozen=True)
class Overview:
    by_severity: list[tuple[str, int]]
    open_total: int
    incidents: list[Incident]
    figures: Counts  # awaiting a human, pending approvals, the last 24 hours' healing
    last_report: datetime | None
    head: tuple[int, str]
    head_at: datetime | None
    anchored_at: datetime | None
    verified: dict[str, Any]  # the last ``guard audit verify``: at, ok, entries or seq/reason


@dataclass(frozen=True)
class IncidentPage:
    incident: Incident
    timeline: list[IncidentTimeline]
    runs: list[RemediationRun]
    commands: list[HumanCommand]
    approvals: list[Approval] = field(default_factory=list)
    related: list[RelatedGroup] = field(default_factory=list)  # signals that joined it


def _severity_order(item: tuple[str, int]) -> tuple[int, str]:
    sev = item[0]
    return (SEVERITIES.index(sev) if sev in SEVERITIES else len(SEVERITIES), sev)


def _pending(session: Session, incident_id: int, limit: int) -> list[Approval]:
    """The incident's live buttons (unused, unexpired)."""
    query = select(Approval).where(
        col(Approval.used_at).is_(None),
        col(Approval.expires_at) > utcnow(),
        Approval.incident_id == incident_id,
    )
    return list(session.exec(query.order_by(col(Approval.created_at).desc()).limit(limit)))


def _last_action(session: Session, action: str) -> datetime | None:
    """When the newest audit entry of ``action`` was written (the newest rows are read first)."""
    found = session.exec(
        select(AuditEntry.at)
        .where(AuditEntry.action == action)
        .order_by(col(AuditEntry.seq).desc())
        .limit(1)
    ).first()
    return found


def overview(db: Database) -> Overview:
    """The overview's figures: open incidents by severity (and the newest of them), what
    ``guard.reports.counts`` counts (as the daily report does), the last report sent, the
    audit chain's head, when it was last anchored and what the last ``guard audit verify``
    found."""
    with db.session() as session:
        counts = session.exec(
            select(Incident.severity, func.count())
            .where(col(Incident.state).in_(OPEN))
            .group_by(Incident.severity)
        ).all()
        incidents = session.exec(
            select(Incident)
            .where(col(Incident.state).in_(OPEN))
            .order_by(col(Incident.id).desc())
            .limit(LIST_LIMIT)
        ).all()
        report = session.exec(
            select(ChannelMessage.created_at)
            .where(ChannelMessage.role == "report")
            .order_by(col(ChannelMessage.id).desc())
            .limit(1)
        ).first()
        head = audit.head(session)
        head_at = session.exec(select(AuditEntry.at).where(AuditEntry.seq == head[0])).first()
        by_severity = sorted(((s, int(n)) for s, n in counts), key=_severity_order)
        return Overview(
            by_severity=by_severity,
            open_total=sum(n for _, n in by_severity),
            incidents=list(incidents),
            figures=last_day(session),
            last_report=report,
            head=head,
            head_at=head_at,
            anchored_at=_last_action(session, "audit.anchored"),
            verified=get_state(session, audit.VERIFIED),
        )


Row = TypeVar("Row", IncidentTimeline, RemediationRun, HumanCommand, RelatedSignal)


def _newest(session: Session, model: type[Row], incident_id: int, limit: int) -> list[Row]:
    """An incident's newest ``limit`` rows of ``model`` (by its indexed ``incident_id``)."""
    query = select(model).where(model.incident_id == incident_id)
    return list(session.exec(query.order_by(col(model.id).desc()).limit(limit)))


def incident_page(db: Database, incident_id: int) -> IncidentPage | None:
    """An incident with its newest timeline entries, remedies, commands and open approvals."""
    with db.session() as session:
        incident = session.get(Incident, incident_id)
        if incident is None:
            return None
        timeline = _newest(session, IncidentTimeline, incident_id, TIMELINE_LIMIT)
        return IncidentPage(
            incident=incident,
            timeline=list(reversed(timeline)),
            runs=_newest(session, RemediationRun, incident_id, 20),
            commands=_newest(session, HumanCommand, incident_id, 20),
            approvals=_pending(session, incident_id, 20),
            related=grouped(list(reversed(_newest(session, RelatedSignal, incident_id, 50)))),
        )


def open_by_monitor(db: Database) -> dict[str, int]:
    """How many incidents are open, per monitor id."""
    with db.session() as session:
        rows = session.exec(
            select(Incident.monitor_id, func.count())
            .where(col(Incident.state).in_(OPEN))
            .group_by(Incident.monitor_id)
        ).all()
    return {m: int(n) for m, n in rows}


def monitor_states(health: list[dict[str, Any]], open_: dict[str, int]) -> list[dict[str, Any]]:
    """Each monitor with its ``state``: ``down`` while it has open incidents or its check
    fails, ``up`` once checked with none, ``not checked yet`` before its first check."""
    shown = []
    for m in health:
        n = open_.get(str(m["id"]), 0)
        if m["healthy"] is False:
            state = "down (the check itself fails)"
        elif n:
            state = f"down ({n} open incident{'s' if n != 1 else ''})"
        elif m["healthy"] is None:
            state = "not checked yet"
        else:
            state = "up"
        shown.append({**m, "open": n, "state": state, "up": state == "up"})
    return shown


def recent_audit(db: Database, limit: int = AUDIT_LIMIT) -> list[AuditEntry]:
    """The newest ``limit`` audit entries, newest first."""
    with db.session() as session:
        return list(
            session.exec(select(AuditEntry).order_by(col(AuditEntry.seq).desc()).limit(limit))
        )


def short(value: Any, limit: int = 64) -> str:
    """A one-line summary of a JSON value (an audit entry's data)."""
    import json

    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"
