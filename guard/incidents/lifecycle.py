"""The incident state machine and the one API that moves incidents.

Every move writes a timeline entry on the incident and an audit-chain entry in the same
transaction, so the history cannot disagree with the state. Two levels:

- ``transition``/``record``/``opened`` work inside a caller's session (triage applies a whole
  batch of signals in one transaction);
- ``Lifecycle`` is the same, one transaction per call, for the agent, human commands and the
  gateway: ``load``, ``move``, ``note``, ``assign`` and ``release``.

Tested by ``tests/agent/test_orchestration.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlmodel import Session, col, select

from guard.domain.exceptions import InvalidTransition
from guard.domain.records import utcnow
from guard.incidents import approvals
from guard.store import audit
from guard.store.db import Database
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
# States in which the agent holds an incident: a pass then waits for it to let go (triage).
AGENT_WORKING = frozenset({S.diagnosing, S.remediating})
# States in which the agent works on an incident (intake, and resuming after a restart).
WORKABLE = frozenset({S.open, S.diagnosing})
# States in which a human's answer (approve, deny, reply, mute) applies.
ANSWERABLE = frozenset({S.open, S.awaiting_human, S.escalated, S.diagnosing, S.muted})
# States after which an incident needs no sandbox: its warm one is released.
ENDED = frozenset({S.resolved, S.muted})
# The details that say how an incident was resolved (``guard.reports.counts``): a reopen
# forgets them, so a later recovery is not counted as the earlier remedy.
RESOLUTION = ("resolved_by", "healed_by")
# States in which an incident takes another monitor's signal as related (correlation): not
# an ended one, since a muted incident's signals reach nobody (muting the noise must not
# silence the real fault that joins it).
ABSORBING = frozenset(set(S) - ENDED)


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


def opened(session: Session, incident: Incident, message: str, *, actor: str, **data: Any) -> None:
    """Record a new incident (already added and flushed, so it has an id) as opened."""
    if incident.state != S.open:
        raise InvalidTransition(f"incident {incident.id} opens in state open, not {incident.state}")
    record(session, incident, "opened", message, actor=actor, to_state=S.open, **data)


def transition(
    session: Session,
    incident: Incident,
    to: IncidentState,
    *,
    actor: str,
    reason: str,
    at: datetime | None = None,
) -> None:
    """Move ``incident`` to ``to``; raise ``InvalidTransition`` if the machine forbids it.
    ``at``: when a resolution happened, if earlier than now (a pass stored late)."""
    current = IncidentState(incident.state)
    if to not in TRANSITIONS[current]:
        raise InvalidTransition(f"incident {incident.id} cannot go from {current} to {to}")
    incident.state = to
    if to is S.resolved:
        now = utcnow()
        incident.resolved_at = now if at is None else min(at, now)
        assert incident.id is not None
        approvals.end_questions_in(session, incident.id, to)
    elif current is S.resolved:  # reopened: what resolved it last time did not last
        incident.resolved_at = None
        incident.details = {k: v for k, v in incident.details.items() if k not in RESOLUTION}
    session.add(incident)
    session.flush()
    record(session, incident, "state_changed", reason, actor=actor, from_state=current, to_state=to)


ReleaseHook = Callable[[int], None]


class Lifecycle:
    """Incidents as the agent, human commands and the gateway see them: one transaction per
    call, each move recorded on the timeline and in the audit chain."""

    def __init__(self, db: Database, *, actor: str = "agent") -> None:
        self.db = db
        self.actor = actor
        self._release_hooks: list[ReleaseHook] = []

    def load(self, incident_id: int) -> Incident | None:
        with self.db.session() as session:
            return session.get(Incident, incident_id)

    def move(
        self,
        incident_id: int,
        to: IncidentState,
        reason: str,
        *,
        actor: str | None = None,
        **details: Any,
    ) -> Incident:
        """Move the incident to ``to`` (no-op if it is there) and merge ``details`` into it."""
        with self.db.session() as session:
            inc = session.get(Incident, incident_id)
            if inc is None:
                raise InvalidTransition(f"no incident {incident_id}")
            if inc.state != to:
                transition(session, inc, to, actor=actor or self.actor, reason=reason)
            if details:
                inc.details = {**inc.details, **details}
                session.add(inc)
            return inc

    def note(
        self, incident_id: int, type_: str, message: str, *, actor: str | None = None, **data: Any
    ) -> None:
        """Add a timeline (and audit) entry without moving the incident."""
        with self.db.session() as session:
            inc = session.get(Incident, incident_id)
            if inc is None:
                raise InvalidTransition(f"no incident {incident_id}")
            record(session, inc, type_, message, actor=actor or self.actor, **data)

    def assign(self, incident_id: int, reason: str) -> Incident:
        """The agent takes the incident: it moves to ``diagnosing``."""
        return self.move(incident_id, S.diagnosing, reason)

    def on_release(self, hook: ReleaseHook) -> None:
        """Call ``hook(incident_id)`` whenever an incident is released."""
        self._release_hooks.append(hook)

    def release(self, incident_id: int) -> None:
        """Nothing more runs for the incident (it ended, or is muted): free what it holds."""
        for hook in self._release_hooks:
            hook(incident_id)


def unattended(db: Database, before: datetime, limit: int = 100) -> list[tuple[int, S]]:
    """Incidents the agent should hold but may not, oldest first, with their states: those
    still ``open`` that opened before ``before`` (the agent takes an incident as it opens, so
    these are hand-offs a store error cut short), and those ``diagnosing`` or ``remediating``
    that have not moved since ``before`` (their worker may have failed mid-way). The caller
    skips the ones a live worker holds."""
    with db.session() as session:
        found: list[tuple[int | None, S]] = [
            (i, S.open)
            for i in session.exec(
                select(Incident.id)
                .where(Incident.state == S.open, col(Incident.opened_at) < before)
                .order_by(col(Incident.id))
                .limit(limit)
            ).all()
        ]
        working = session.exec(
            select(Incident.id, Incident.state, Incident.opened_at)
            .where(col(Incident.state).in_((S.diagnosing, S.remediating)))
            .order_by(col(Incident.id))
            .limit(limit)
        ).all()
        for incident_id, state, opened_at in working:
            moved = session.exec(  # the incident's newest entry (indexed by incident)
                select(IncidentTimeline.at)
                .where(IncidentTimeline.incident_id == incident_id)
                .order_by(col(IncidentTimeline.id).desc())
                .limit(1)
            ).first()
            if (moved or opened_at) < before:
                found.append((incident_id, S(state)))
    return sorted((i, state) for i, state in found if i is not None)
