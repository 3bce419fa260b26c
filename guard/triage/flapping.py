"""Reopening: a fault that comes back within ``flap_window`` of resolving reopens its incident;
after ``flap_threshold`` reopenings the incident is flapping (announced once), and it resolves
only once its check has passed for a whole ``flap_window`` (``Triage._passed``). Tested in
tests/triage/test_triage.py (the flapping tests)."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlmodel import Session, col, select

from guard.config import TriageSettings
from guard.domain.records import IncidentEvent, Signal
from guard.harness.crashpoints import reached
from guard.incidents.lifecycle import record, transition
from guard.store.models import Incident, IncidentState
from guard.triage import counting
from guard.triage.counting import ACTOR, incident_event


def recently_resolved(
    session: Session, fp: str, now: datetime, settings: TriageSettings
) -> Incident | None:
    """The incident with fingerprint ``fp`` resolved within ``flap_window`` of ``now``."""
    since = now - timedelta(seconds=settings.flap_window)
    return session.exec(
        select(Incident)
        .where(
            Incident.fingerprint == fp,
            Incident.state == IncidentState.resolved,
            col(Incident.resolved_at) >= since,
        )
        .order_by(col(Incident.id).desc())
        .limit(1)
    ).first()


def asked_before_verdict(incident: Incident, sig: Signal) -> bool:
    """Whether ``sig`` is a check's failure asked before ``incident`` was resolved: a check in
    flight while a remedy was verified answers late with what the target was before the fix.
    That is older than the verdict (the verification's own check, or a human's word) and
    reopens nothing; a check asked after it does, at once."""
    return (
        sig.started_at is not None
        and incident.resolved_at is not None
        and sig.started_at < incident.resolved_at
    )


def note_stale(session: Session, incident: Incident, sig: Signal) -> None:
    """A timeline entry on the resolved ``incident`` for a failure asked before it resolved."""
    assert sig.started_at is not None
    record(
        session,
        incident,
        "stale_failure",
        f"a check asked at {sig.started_at:%H:%M:%S} (before this was resolved) failed: "
        f"{sig.message}; not reopened, the next check decides",
        actor=ACTOR,
        audit_it=False,
        monitor=sig.monitor_id,
        kind=sig.kind,
    )


def reopen(
    session: Session,
    incident: Incident,
    sig: Signal,
    events: list[IncidentEvent],
    settings: TriageSettings,
) -> None:
    """Reopen ``incident`` for ``sig``; mark it flapping at ``flap_threshold`` reopenings."""
    incident.reopen_count += 1
    reached("triage.flap_reopen")
    counting.count(session, incident, sig)
    transition(
        session,
        incident,
        IncidentState.open,
        actor=ACTOR,
        reason=f"failed again within {settings.flap_window:g}s of resolving: {sig.message}",
    )
    if not incident.flapping and incident.reopen_count >= settings.flap_threshold:
        incident.flapping = True
        record(
            session,
            incident,
            "flapping",
            f"reopened {incident.reopen_count} times; holding it open until the check "
            f"passes for {settings.flap_window:g}s",
            actor=ACTOR,
        )
        events.append(incident_event(incident, "flapping"))
    else:  # flapping already or not, the agent takes it at once (not the recovery sweep)
        events.append(incident_event(incident, "reopened"))
