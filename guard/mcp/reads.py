"""What ``list_incidents`` and ``show_incident`` read: plain JSON-ready dicts, each query
bounded by a LIMIT; ``visible`` makes what they quote safe to hand on."""

from __future__ import annotations

import json
from typing import Any

from sqlmodel import col, select

from guard.agent.fencing import defused
from guard.domain.records import IncidentState
from guard.store.db import Database
from guard.store.models import HumanCommand, Incident, IncidentTimeline, RemediationRun
from guard.triage.correlation import related_of
from guard.triage.related_groups import grouped
from guard.util.commandtext import digest
from guard.util.textsafe import printable

ACTIVE = "active"  # every state but resolved and muted
TIMELINE = 40  # newest timeline entries shown
READ_CHARS = 32000  # a read's JSON at most: older timeline entries are dropped to fit
STATES = ", ".join([s.value for s in IncidentState] + [ACTIVE])


def visible(value: Any) -> Any:
    """``value`` (JSON-ready) with each string, keys too, made visible (``printable``: no
    control or bidi character) and the fence's marker defused in any spelling. The JSON's
    escapes (``\\u001b``) would hide them from the text's checks, not from a client's parser."""
    if isinstance(value, str):
        return defused(printable(value))
    if isinstance(value, dict):
        return {visible(k): visible(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [visible(v) for v in value]
    return value


def _v(value: Any) -> str:
    """An enum's value (a str enum's ``str()`` varies across Python versions)."""
    return str(getattr(value, "value", value))


def summary(inc: Incident) -> dict[str, Any]:
    return {
        "id": inc.id,
        "state": _v(inc.state),
        "severity": inc.severity,
        "source": inc.source,
        "target": inc.target,
        "kind": inc.kind,
        "title": inc.title,
        "count": inc.count,
        "opened_at": inc.opened_at.isoformat(),
        "last_seen": inc.last_seen.isoformat(),
    }


def list_incidents(db: Database, state: str | None, limit: int) -> list[dict[str, Any]]:
    """Incidents newest first, in ``state`` (``active``: not ended), at most ``limit``.
    Raises ``ValueError`` naming the states for an unknown one."""
    query = select(Incident)
    if state == ACTIVE:
        ended = (IncidentState.resolved, IncidentState.muted)
        query = query.where(col(Incident.state).not_in(ended))
    elif state:
        try:
            query = query.where(Incident.state == IncidentState(state))
        except ValueError:
            raise ValueError(f"state {state!r}: one of {STATES}") from None
    with db.session() as session:
        rows = session.exec(query.order_by(col(Incident.id).desc()).limit(limit)).all()
        return [summary(r) for r in rows]


def incident_view(db: Database, incident_id: int) -> dict[str, Any] | None:
    """An incident whole: its facts and details, the options a human was shown (a proposal
    with its command and digest), its newest timeline entries, remedies and answers."""
    with db.session() as session:
        inc = session.get(Incident, incident_id)
        if inc is None:
            return None
        timeline = session.exec(
            select(IncidentTimeline)
            .where(IncidentTimeline.incident_id == incident_id)
            .order_by(col(IncidentTimeline.id).desc())
            .limit(TIMELINE)
        ).all()
        runs = session.exec(
            select(RemediationRun)
            .where(RemediationRun.incident_id == incident_id)
            .order_by(col(RemediationRun.id).desc())
            .limit(10)
        ).all()
        answers = session.exec(
            select(HumanCommand)
            .where(HumanCommand.incident_id == incident_id)
            .order_by(col(HumanCommand.id).desc())
            .limit(10)
        ).all()
        related = [g.as_dict() for g in grouped(related_of(session, incident_id))]
        proposal = inc.details.get("proposal")
        return summary(inc) | {
            "message": inc.message[:4000],
            "monitor_id": inc.monitor_id,
            "resolved_at": inc.resolved_at.isoformat() if inc.resolved_at else None,
            "options": list(inc.details.get("options") or []),
            "proposal": (
                proposal | {"digest": digest(str(proposal.get("fix", "")))}
                if isinstance(proposal, dict)
                else None
            ),
            "details": {k: v for k, v in inc.details.items() if k not in ("proposal",)},
            "related": related,  # the other checks that saw this fault (``incidents show``'s)
            "timeline": [
                {"at": t.at.isoformat(), "type": t.type, "message": t.message}
                for t in reversed(timeline)
            ],
            "remediations": [
                {"id": r.id, "skill": r.skill, "status": _v(r.status), "by": r.approved_by}
                for r in runs
            ],
            "answers": [
                {"verb": c.verb, "by": c.actor, "status": _v(c.status), "outcome": c.outcome}
                for c in answers
            ],
        }


def fitted(view: dict[str, Any], limit: int = READ_CHARS) -> str:
    """``view`` as JSON within ``limit`` characters: its oldest timeline entries dropped
    (``timeline_dropped`` says how many), never cut mid-JSON."""
    timeline = list(view.get("timeline") or [])
    dropped = 0
    text = json.dumps(view, indent=1, default=str)
    while len(text) > limit and timeline:
        timeline.pop(0)
        dropped += 1
        text = json.dumps(view | {"timeline": timeline, "timeline_dropped": dropped}, default=str)
    return text
