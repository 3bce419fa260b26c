"""Ends that no check announces: a log rule's incident when its lines stop, and a mute that ran
out when its fault fires again.

- ``resolve_quiet``: a log rule's incident (``guard.incidents.ending.ends_by_quiet``) that no
  matching line reached for its monitor's ``resolve_after`` resolves (unless one of its related
  checks still fails). Nothing else ends it: a check passing on its target (the container is
  running) says nothing about the bug that wrote the lines.
- ``wake``: a signal seen after a muted incident's mute or silence ended (``muted_until``
  in its details) opens it again, so it is asked about as a new one is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta

from sqlmodel import Session, col, select

from guard.domain.durations import format_duration
from guard.domain.records import IncidentEvent, utcnow
from guard.incidents.ending import ends_by_quiet
from guard.incidents.lifecycle import AUTO_RESOLVABLE, transition
from guard.store.models import Incident, IncidentState
from guard.triage.counting import ACTOR, incident_event


def resolve_quiet(
    session: Session,
    resolve_after: Mapping[str, float],
    events: list[IncidentEvent],
    holds: Callable[[Session, Incident], bool],
    now: datetime | None = None,
) -> None:
    """Resolve each log rule's incident quiet for its monitor's ``resolve_after`` (monitor id
    -> seconds; 0 or missing: never by itself)."""
    now = now or utcnow()
    afters = {m: after for m, after in resolve_after.items() if after > 0}
    if not afters:
        return
    # one query for every monitor (this runs every second; it was one per monitor: 200 log
    # files' monitors were 200 queries a second, the most CPU a quiet Guard spent)
    quiet = session.exec(
        select(Incident)
        .where(
            col(Incident.state).in_(AUTO_RESOLVABLE),
            col(Incident.last_seen) < now - timedelta(seconds=min(afters.values())),
        )
        .order_by(col(Incident.id))
    ).all()
    for incident in quiet:
        after = afters.get(incident.monitor_id)
        if after is None or incident.last_seen >= now - timedelta(seconds=after):
            continue
        if not ends_by_quiet(incident) or holds(session, incident):
            continue
        resolve(
            session,
            incident,
            f"no matching line for {format_duration(after)} (resolve_after)",
            events,
        )


def resolve(
    session: Session,
    incident: Incident,
    reason: str,
    events: list[IncidentEvent],
    at: datetime | None = None,
) -> None:
    """Resolve ``incident`` by itself (its fault is over): no longer flapping either. ``at``:
    when the pass that ends it was observed (a batch stored late says when it happened)."""
    transition(session, incident, IncidentState.resolved, actor=ACTOR, reason=reason, at=at)
    incident.flapping = False
    events.append(incident_event(incident, "resolved"))


def wake(session: Session, incident: Incident, events: list[IncidentEvent], seen: datetime) -> None:
    """Open a muted incident again if its mute (or silence) had ended when its signal was
    ``seen`` (a line written while it was muted stays muted, however late it lands)."""
    until = (incident.details or {}).get("muted_until")
    if incident.state != IncidentState.muted or not until:
        return
    if datetime.fromisoformat(str(until)) > min(seen, utcnow()):
        return
    incident.details = {
        k: v for k, v in incident.details.items() if k not in ("muted_until", "silenced")
    }
    transition(
        session,
        incident,
        IncidentState.open,
        actor=ACTOR,
        reason="fired again after its mute or silence ended",
    )
    events.append(incident_event(incident, "reopened"))
