"""What a signal does to the incident it lands on (count, last seen, worst severity), and the
event that tells the hooks; shared by triage (``engine``) and the storm breaker (``storm``).

Tested by ``tests/triage/test_triage.py``."""

from __future__ import annotations

from sqlmodel import Session

from guard.domain.records import IncidentEvent, Severity, Signal
from guard.incidents.ending import STORM_KIND as STORM_KIND
from guard.incidents.lifecycle import record
from guard.store.models import Incident
from guard.triage import redelivery

ACTOR = "triage"
HEADLINE = ("exit_code", "status")  # what a check's message reports, in its signal's details


def max_severity(a: str, b: str) -> str:
    try:
        return a if Severity(a).rank >= Severity(b).rank else b
    except ValueError:
        return b


def count(session: Session, incident: Incident, sig: Signal) -> None:
    """Count ``sig`` on ``incident`` (a redelivered alert counts once)."""
    if redelivery.counted(incident.details, sig):
        return
    follow_headline(session, incident, sig)
    # a storm counts signals (redeliveries too): its details are the storm's own
    keyed = redelivery.delivery(sig) or redelivery.signed_at(sig) is not None
    if keyed and incident.kind != STORM_KIND:
        incident.details = redelivery.remember(incident.details, sig)
    incident.count += sig.count
    incident.last_seen = max(incident.last_seen, sig.observed_at)
    incident.severity = max_severity(incident.severity, sig.severity.value)
    session.add(incident)


def follow_headline(session: Session, incident: Incident, sig: Signal) -> None:
    """A later occurrence that reports something else (another exit code, another HTTP
    status: one fingerprint, as numbers are masked) becomes the incident's message, so what is
    shown is current; a ``changed`` timeline entry keeps what it said before."""
    if incident.kind == STORM_KIND or sig.observed_at < incident.last_seen:
        return
    was = {k: incident.details.get(k) for k in HEADLINE if k in sig.details}
    now = {k: sig.details[k] for k in was}
    if was == now:
        return
    record(
        session,
        incident,
        "changed",
        f"now: {sig.message} (was: {incident.message})",
        actor=ACTOR,
        was={**was, "message": incident.message},
        now={**now, "message": sig.message},
    )
    incident.message = sig.message
    incident.details = {**incident.details, **now}


def incident_event(incident: Incident, type_: str) -> IncidentEvent:
    assert incident.id is not None
    return IncidentEvent(
        incident_id=incident.id,
        type=type_,
        state=incident.state,
        title=incident.title,
        severity=incident.severity,
    )
