"""The storm breaker: one monitor may open at most ``max_new_incidents`` per ``storm_window``.

Past that, what would have opened a new incident (or joined one as a related signal: joins
count toward the cap too) folds into one *storm* incident on that monitor ("storm on api-log:
4,180 signals in 937 templates"), announced once like any incident. Its details keep the most
frequent templates with their counts (and the monitor's service, if it has one). Signals that
belong to an incident already open still count there. The storm resolves once a whole window
passes with nothing folded into it (``calm_storms``), so the next storm is a new announcement.

Triage (``engine``) asks whether a monitor is over its cap, and if so hands the signal here;
everything a storm does (open, fold, count, title, calm down) happens in this module, which
never calls back into the engine.

Tested by ``tests/correlation/test_triage_correlation.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from guard.domain.fingerprint import keyed_fingerprint
from guard.domain.records import IncidentEvent, Signal, utcnow
from guard.harness.crashpoints import reached
from guard.incidents.lifecycle import AUTO_RESOLVABLE, opened, transition
from guard.store.correlation import RelatedSignal
from guard.store.models import ACTIVE_STATES, Incident, IncidentState
from guard.triage.counting import ACTOR, STORM_KIND, count, incident_event

TOP = 10  # templates shown in a storm's details
KEPT = 500  # distinct templates counted one by one; more are counted as "other"


def storm_fingerprint(monitor_id: str) -> str:
    return keyed_fingerprint("guard", monitor_id, STORM_KIND, "storm")


def storm_check_key(monitor_id: str) -> str:
    """Its own check key: no check's "ok" resolves a storm, only a quiet window."""
    return f"{monitor_id}|{STORM_KIND}"


def storm_title(monitor_id: str, signals: int, templates: int, more: bool = False) -> str:
    """ "storm on api-log: 4,180 signals in 937 templates" (``more``: past those counted)."""
    return (
        f"storm on {monitor_id}: {signals:,} signals in {templates:,}{'+' if more else ''} "
        f"template{'s' if templates != 1 or more else ''}"
    )


def opened_recently(session: Session, monitor_id: str, window: float, now: datetime) -> int:
    """How many incidents (storms aside) ``monitor_id`` opened within ``window`` seconds, and
    how many of its signals joined another incident then (``guard.triage.correlation``)."""
    since = now - timedelta(seconds=window)
    opened = session.exec(
        select(func.count())
        .select_from(Incident)
        .where(
            Incident.monitor_id == monitor_id,
            Incident.kind != STORM_KIND,
            col(Incident.opened_at) >= since,
        )
    ).one()
    joined = session.exec(
        select(func.count())
        .select_from(RelatedSignal)
        .where(RelatedSignal.monitor_id == monitor_id, col(RelatedSignal.joined_at) >= since)
    ).one()
    return int(opened) + int(joined)


def active_storm(session: Session, monitor_id: str) -> Incident | None:
    return session.exec(
        select(Incident)
        .where(
            Incident.fingerprint == storm_fingerprint(monitor_id),
            col(Incident.state).in_(ACTIVE_STATES),
        )
        .order_by(col(Incident.id).desc())
        .limit(1)
    ).first()


class StormBatch:
    """The storm breaker during one triage batch: each monitor's recent opens are read once
    and then counted in memory, and each storm's details are folded in memory and written
    once at the end (a storm of distinct lines would otherwise rewrite them per line)."""

    def __init__(
        self,
        max_new_incidents: int,
        window: float,
        service_of: Callable[[str], str | None] | None = None,
    ) -> None:
        self.max_new_incidents = max_new_incidents
        self.window = window
        self.service_of = service_of  # a monitor's service, kept on its storms (for routes)
        self._opens: dict[str, int] = {}
        self._storms: dict[str, tuple[Incident, dict[str, Any]]] = {}

    def over_cap(self, session: Session, monitor_id: str) -> bool:
        if monitor_id not in self._opens:
            self._opens[monitor_id] = opened_recently(session, monitor_id, self.window, utcnow())
        return self._opens[monitor_id] >= self.max_new_incidents

    def opened(self, monitor_id: str) -> None:
        self._opens[monitor_id] = self._opens.get(monitor_id, 0) + 1

    def storm(self, session: Session, monitor_id: str) -> Incident | None:
        if monitor_id in self._storms:
            return self._storms[monitor_id][0]
        return active_storm(session, monitor_id)

    def take(
        self, session: Session, sig: Signal, key: str, label: str, events: list[IncidentEvent]
    ) -> None:
        """Fold ``sig`` (its template ``key``, named ``label``) into its monitor's storm,
        opening the storm (announced once, like any incident) if none is active."""
        incident = self.storm(session, sig.monitor_id)
        new_storm = incident is None
        if incident is None:
            incident = self._new_storm(sig)
        self.fold(incident, sig, key, label)
        count(session, incident, sig)
        reached("triage.storm_fold")
        if new_storm:
            incident.title = storm_title(sig.monitor_id, sig.count, 1)
            session.flush()
            opened(
                session,
                incident,
                f"more than {self.max_new_incidents} new incidents on "
                f"{sig.monitor_id} within {self.window:g}s; what follows "
                f"folds into this storm. First: {sig.message}",
                actor=ACTOR,
                fingerprint=incident.fingerprint,
                kind=incident.kind,
                target=incident.target,
                severity=incident.severity,
            )
            events.append(incident_event(incident, "opened"))

    def _new_storm(self, sig: Signal) -> Incident:
        service = self.service_of(sig.monitor_id) if self.service_of is not None else None
        return Incident(
            fingerprint=storm_fingerprint(sig.monitor_id),
            check_key=storm_check_key(sig.monitor_id),
            monitor_id=sig.monitor_id,
            source="guard",
            target=sig.monitor_id,
            kind=STORM_KIND,
            severity=sig.severity.value,
            title="",
            message=sig.message,
            count=0,
            opened_at=utcnow(),
            first_seen=sig.observed_at,
            last_seen=sig.observed_at,
            details={
                "max_new_incidents": self.max_new_incidents,
                "storm_window": self.window,
                **({"service": service} if service else {}),
            },
        )

    def fold(self, incident: Incident, sig: Signal, key: str, label: str) -> None:
        """Count ``sig`` in under its template ``key`` (named ``label``, its latest text)."""
        if sig.monitor_id not in self._storms:
            self._storms[sig.monitor_id] = (incident, _working(incident.details))
        details = self._storms[sig.monitor_id][1]
        counts, labels = details["counts"], details["labels"]
        if key in counts or len(counts) < KEPT:
            counts[key] = counts.get(key, 0) + sig.count
            labels[key] = f"{sig.kind}: {label[:300]}"
        else:
            details["other"] += sig.count
        details["signals"] += sig.count

    def write(self) -> set[int]:
        """Put each storm's folded details and title on its incident; the storms' ids."""
        written: set[int] = set()
        for monitor_id, (incident, details) in self._storms.items():
            counts, labels = details["counts"], details["labels"]
            top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP]
            incident.details = {
                **details,
                "counts": dict(counts),
                "labels": dict(labels),
                "templates": len(counts),
                "top_templates": [{"template": labels[k], "count": c} for k, c in top],
            }
            incident.title = storm_title(
                monitor_id, details["signals"], len(counts), more=bool(details["other"])
            )
            if incident.id is not None:
                written.add(incident.id)
        self._storms.clear()
        return written


def _working(details: dict[str, Any]) -> dict[str, Any]:
    return {
        **details,
        "storm": True,
        "counts": dict(details.get("counts", {})),
        "labels": dict(details.get("labels", {})),
        "other": int(details.get("other", 0)),
        "signals": int(details.get("signals", 0)),
    }


def quiet_storms(
    session: Session, window: float, now: datetime | None = None, busy: Collection[int] = ()
) -> list[Incident]:
    """Storms that nothing was folded into for a whole ``window`` (and that the agent is not
    working on). ``busy``: storms that took signals in this batch, however long ago those
    were observed (a batch that lags its scan by more than the window is not a quiet storm)."""
    cutoff = (now or utcnow()) - timedelta(seconds=window)
    found = session.exec(
        select(Incident).where(
            Incident.kind == STORM_KIND,
            Incident.source == "guard",
            col(Incident.state).in_(AUTO_RESOLVABLE),
            col(Incident.last_seen) < cutoff,
        )
    ).all()
    return [i for i in found if i.id not in busy]


def calm_storms(
    session: Session, window: float, events: list[IncidentEvent], busy: Collection[int] = ()
) -> None:
    """Resolve the storms gone quiet for a whole ``window`` (not the ``busy`` ones)."""
    for incident in quiet_storms(session, window, busy=busy):
        transition(
            session,
            incident,
            IncidentState.resolved,
            actor=ACTOR,
            reason=f"storm over: nothing new for {window:g}s ({incident.count:,} signals in all)",
        )
        events.append(incident_event(incident, "resolved"))
