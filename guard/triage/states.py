"""The incident state machine: which moves are allowed, and how each is recorded.

Every move writes a timeline entry on the incident and an audit-chain entry in the same
transaction, so the history cannot disagree with the state.
"""

from __future__ import annotations

from typing import Any

from sqlmodel import Session

from guard.exceptions import InvalidTransition
from guard.records import utcnow
from guard.store import audit
from guard.store.models import Incident, IncidentState, IncidentTimeline

S = IncidentState
TRANSITIONS: dict[IncidentState, frozenset[IncidentState]] = {
    S.open: frozenset(
        {S.diagnosing, S.awaiting_human, S.remediating, S.resolved, S.escalated, S.muted}
    ),
    S.diagnosing: frozenset({S.remediating, S.awaiting_human, S.resolved, S.escalated, S.open}),
    S.awaiting_human: frozenset({S.remediating, S.resolved, S.escalated, S.muted, S.open}),
    S.remediating: frozenset({S.resolved, S.escalated, S.awaiting_human, S.diagnosing, S.open}),
    S.escalated: frozenset({S.awaiting_human, S.remediating, S.resolved, S.muted, S.open}),
    S.muted: frozenset({S.open, S.resolved}),
    S.resolved: frozenset({S.open}),
}

# States in which triage may resolve an incident by itself when its check passes again;
# in the others the agent owns the incident and verifies recovery itself.
AUTO_RESOLVABLE = frozenset({S.open, S.awaiting_human, S.escalated, S.muted})


def record(
    session: Session,
    incident: Incident,
    type_: str,
    message: str,
    *,
    actor: str,
    audit_it: bool = True,
    **data: Any,
) -> None:
    """Add a timeline entry (and an audit entry) for something that happened to ``incident``."""
    assert incident.id is not None
    session.add(
        IncidentTimeline(
            incident_id=incident.id,
            type=type_,
            message=message,
            from_state=data.pop("from_state", None),
            to_state=data.pop("to_state", None),
            data=data,
        )
    )
    if audit_it:
        audit.append(
            session,
            actor=actor,
            action=f"incident.{type_}",
            subject=f"incident:{incident.id}",
            data={"message": message, **data},
        )


def transition(
    session: Session, incident: Incident, to: IncidentState, *, actor: str, reason: str
) -> None:
    """Move ``incident`` to ``to``; raise ``InvalidTransition`` if the machine forbids it."""
    current = IncidentState(incident.state)
    if to not in TRANSITIONS[current]:
        raise InvalidTransition(
            f"incident {incident.id} cannot go from {current.value} to {to.value}"
        )
    incident.state = to
    if to is S.resolved:
        incident.resolved_at = utcnow()
    elif current is S.resolved:
        incident.resolved_at = None
    session.add(incident)
    session.flush()
    record(
        session,
        incident,
        "state_changed",
        reason,
        actor=actor,
        from_state=current.value,
        to_state=to.value,
    )
