"""Acknowledging an incident: a person says "I have it", which stops its escalation steps and
reminders (``guard.notify.escalation``) without answering its question.

Every channel (``guard ack ID``, a chat's Acknowledge button) acknowledges here, through the
authorisation gate (verb ``ack``, role operator) in the transaction that records it: a refusal
is audited (``human.refused``) and raises ``NotAuthorised``. The first acknowledgement wins; a
second one reports the first. A reopened incident is a new episode: it needs a new one. ``also``
runs in the same transaction (the notify layer queues the pagers' ``acknowledge`` there, a chat
gateway stores the update it handles).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlmodel import Session

from guard.domain.exceptions import GuardError
from guard.domain.records import utcnow
from guard.incidents.gate import Actor, Allowed, Gate, NotAuthorised, Refused, authorise_in
from guard.incidents.lifecycle import record
from guard.store.db import Database
from guard.store.escalation import IncidentAck
from guard.store.models import Incident, IncidentState

VERB = "ack"


class CannotAck(GuardError):
    """The incident does not exist, or is over."""


@dataclass(frozen=True)
class Acked:
    incident_id: int
    by: str
    at: datetime
    first: bool  # False: someone had acknowledged it before (``by`` and ``at`` are theirs)


def acknowledge(
    db: Database,
    incident_id: int,
    actor: Actor,
    gate: Gate,
    *,
    also: Callable[[Session, Incident], object] | None = None,
    now: datetime | None = None,
) -> Acked:
    """Record ``actor``'s acknowledgement of the incident (see the module's docstring)."""
    at = now or utcnow()
    with db.session() as session:
        incident = session.get(Incident, incident_id)
        decision = authorise_in(session, gate, actor, VERB, incident_id, incident)
        if isinstance(decision, Allowed):
            if incident is None:
                raise CannotAck(f"no incident {incident_id} (see `guard incidents list`)")
            if incident.state == IncidentState.resolved:
                raise CannotAck(f"incident {incident_id} is resolved: nothing to acknowledge")
            before = ack_of(session, incident)
            if before is not None:
                return Acked(incident_id, before.by, before.at, first=False)
            session.add(
                IncidentAck(
                    incident_id=incident_id,
                    episode=incident.reopen_count,
                    by=actor.name,
                    channel=actor.channel,
                    at=at,
                )
            )
            session.flush()  # two at once: the second fails here (the caller may retry)
            record(
                session,
                incident,
                "acknowledged",
                f"acknowledged by {actor.name}: escalation and reminders stop",
                actor=actor.name,
                channel=actor.channel,
                allowed=decision.by,
            )
            if also is not None:
                also(session, incident)
    if isinstance(decision, Refused):
        raise NotAuthorised(decision.reason)
    return Acked(incident_id, actor.name, at, first=True)


def ack_of(session: Session, incident: Incident) -> IncidentAck | None:
    """The acknowledgement of the incident's current episode (since it last reopened), if any."""
    return session.get(IncidentAck, (incident.id, incident.reopen_count))
