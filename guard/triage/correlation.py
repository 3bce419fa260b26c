"""Correlation: signals of one fault, from different monitors, become one incident.

Monitors name their ``service:``; playbooks' ``services:`` say what each ``depends_on``
(``guard.playbooks.services``). When a firing signal would open a new incident, or reopen one
(correlation is decided first), triage asks ``Correlation.root``: an incident still open and
still firing (its own check fired within ``triage.correlate_window`` of the signal; its related
signals do not count), that covers the signal's service (its own service, or one of its related
signals', is that service, or one related to it by ``depends_on`` either way round), takes it
as a *related signal* instead (``guard.store.correlation.RelatedSignal``: its own count, first
and last seen, message). A container's death of another kind, at the incident's severity or
worse, joins only an incident begun at most ``triage.cause_lead`` before it (its symptoms);
an older one is another fault, and the death is asked about on its own.
A muted or resolved incident takes nothing: a person muted its noise, and a real fault of the
service must still be asked about and paged (its signal opens, or joins, another incident).
Correlation is across monitors: an incident only one monitor's signals make up takes no
other signal of that monitor (a monitor's distinct findings, two exceptions in one log, a
deployment failure and its build log's error, keep their own incidents as before); once another
monitor's signal has joined it, they join too.
The root is the dependency's incident when there is one (the database's, for the API's
signal), else the first one opened. A dependant's symptom waits ``triage.symptom_wait`` for its
cause first (``guard.triage.waiting``); a dependency whose own signal comes only *after* a
dependant's incident opened all the same joins that incident too (the first one stays the root: its
question may already be asked and its remedy running); ``guard incidents split`` gives it its
own incident if that was wrong, and the pair is never joined again (``CorrelationSplit``).

A related signal firing again counts on its row. Its check passing marks the row ``ok``; a
root with a related signal still firing is not auto-resolved by its own check alone (a log
rule's row is an ``event``: lines have no "ok", and never hold the root). All of it happens in
triage's transaction, so a batch is stored whole or not at all.

Tested by ``tests/correlation/test_triage_correlation.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from sqlmodel import Session, col, select

from guard.domain.records import IncidentEvent, Signal
from guard.harness.crashpoints import reached
from guard.incidents.lifecycle import ABSORBING, record
from guard.playbooks.services import ServiceMap
from guard.store.correlation import CorrelationSplit, RelatedSignal
from guard.store.models import ACTIVE_STATES, Incident
from guard.triage.counting import ACTOR, STORM_KIND, incident_event, max_severity

FIRING, OK, EVENT = "firing", "ok", "event"
DEATHS = frozenset(  # a container's (pod's, deployment's) own death: a fault, not a symptom
    {
        "container_exited",
        "container_oom_killed",
        "container_restarting",
        "k8s_oom_killed",
        "k8s_crash_loop_back_off",
        "railway_deployment_crashed",
    }
)
Seen = Callable[[str], str | None]  # a check's key -> when it last fired (ISO time)


def signal_line(kind: str, target: str, count: int) -> str:
    """How a related signal is named in messages: ``http unreachable on URL (x3)``."""
    return f"{kind.replace('_', ' ')} on {target} (x{count})"


def is_event(sig: Signal) -> bool:
    """Whether ``sig`` is a log rule's line (it has no ``ok`` to wait for)."""
    return "rule" in sig.details


class Correlation:
    """Joins signals to their root incident within ``window`` seconds (0: never)."""

    def __init__(
        self, window: float, services: ServiceMap | None = None, *, cause_lead: float = 30.0
    ) -> None:
        self.window = window
        self.services = services or ServiceMap()
        self.cause_lead = cause_lead

    def service(self, monitor_id: str) -> str | None:
        return self.services.service(monitor_id)

    # -- a signal already joined ---------------------------------------------------------------

    def joined(self, session: Session, fingerprint: str) -> RelatedSignal | None:
        """The related signal with ``fingerprint`` on a root still open and not muted (a
        muted root's related signal opens an incident of its own when it fires again)."""
        if not self.services.monitors:  # no monitor names a service: nothing joins
            return None
        return session.exec(
            select(RelatedSignal)
            .join(Incident, col(Incident.id) == col(RelatedSignal.incident_id))
            .where(
                RelatedSignal.fingerprint == fingerprint,
                col(Incident.state).in_(ABSORBING),
            )
            .order_by(col(RelatedSignal.id).desc())
            .limit(1)
        ).first()

    def count(self, session: Session, row: RelatedSignal, sig: Signal) -> None:
        """Count ``sig`` on its related signal (and on its root's last seen)."""
        row.count += sig.count
        row.last_seen = max(row.last_seen, sig.observed_at)
        row.severity = max_severity(row.severity, sig.severity.value)
        row.message = sig.message
        row.status = EVENT if is_event(sig) else FIRING
        session.add(row)
        root = session.get(Incident, row.incident_id)
        if root is not None and sig.observed_at > root.last_seen:
            root.last_seen = sig.observed_at
            session.add(root)

    # -- a signal that would open an incident --------------------------------------------------

    def root(
        self, session: Session, sig: Signal, fingerprint: str, seen: Seen | None = None
    ) -> Incident | None:
        """The open incident ``sig`` belongs to, if any (see the module's docstring).
        ``seen``: when a check last fired (its incidents' own signals, not their related)."""
        service = self.service(sig.monitor_id)
        if service is None or self.window <= 0:
            return None
        near = timedelta(seconds=self.window)
        found = session.exec(
            select(Incident)
            .where(
                col(Incident.state).in_(ABSORBING),
                col(Incident.last_seen) >= sig.observed_at - near,  # (own seen <= last seen)
                col(Incident.first_seen) <= sig.observed_at + near,
                Incident.kind != STORM_KIND,
            )
            .order_by(col(Incident.id))
        ).all()
        candidates = [
            inc
            for inc in found
            if self._firing(inc, sig, near, seen) and not self._another_fault(inc, sig)
        ]
        covers, monitors = self._covers(session, candidates)
        related = [
            inc
            for inc in candidates
            if any(self.services.related(service, other) for other in covers[inc.id])
            and monitors[inc.id] != {sig.monitor_id}  # across monitors, not within one
        ]
        if not related:
            return None
        split = self._split(session, fingerprint, [inc.fingerprint for inc in related])
        related = [inc for inc in related if inc.fingerprint not in split]
        needs = self.services.dependencies(service)
        first = [inc for inc in related if covers[inc.id] & needs]
        return next(iter(first or related), None)

    def _firing(self, inc: Incident, sig: Signal, near: timedelta, seen: Seen | None) -> bool:
        """Whether ``inc`` is still firing: its own check fired within the window of ``sig``
        (its related signals keep its last seen, not this). Before its check recorded it (an
        older store), its last seen stands in."""
        stored = seen(inc.check_key) if seen is not None else None
        own = datetime.fromisoformat(stored) if stored else inc.last_seen
        return own >= sig.observed_at - near

    def _another_fault(self, inc: Incident, sig: Signal) -> bool:
        """A container's death (exit, OOM kill, restart, crash) of another kind than ``inc``,
        at its severity or worse, seen more than ``cause_lead`` after ``inc`` began: it cannot
        have caused what ``inc`` shows, so it is a fault of its own, asked on its own."""
        if sig.kind not in DEATHS or sig.kind == inc.kind:
            return False
        if max_severity(inc.severity, sig.severity.value) != sig.severity.value:
            return False  # a lesser signal of a worse fault: it joins
        return sig.observed_at - inc.first_seen > timedelta(seconds=self.cause_lead)

    def _covers(
        self, session: Session, incidents: Sequence[Incident]
    ) -> tuple[dict[int | None, set[str]], dict[int | None, set[str]]]:
        """The services each incident covers, and the monitors it gathers: its own and its
        related signals'."""
        covers: dict[int | None, set[str]] = {
            inc.id: {s} if isinstance(s := (inc.details or {}).get("service"), str) else set()
            for inc in incidents
        }
        monitors: dict[int | None, set[str]] = {inc.id: {inc.monitor_id} for inc in incidents}
        if not incidents:
            return covers, monitors
        for root_id, service, monitor_id in session.exec(
            select(
                RelatedSignal.incident_id, RelatedSignal.service, RelatedSignal.monitor_id
            ).where(col(RelatedSignal.incident_id).in_(list(covers)))
        ).all():
            monitors[root_id].add(monitor_id)
            if service is not None:
                covers[root_id].add(service)
        return covers, monitors

    def _split(self, session: Session, fingerprint: str, roots: list[str]) -> set[str]:
        """Which of ``roots`` a human split ``fingerprint`` off before."""
        return set(
            session.exec(
                select(CorrelationSplit.root_fingerprint).where(
                    CorrelationSplit.fingerprint == fingerprint,
                    col(CorrelationSplit.root_fingerprint).in_(roots),
                )
            ).all()
        )

    def join(
        self,
        session: Session,
        root: Incident,
        sig: Signal,
        fingerprint: str,
        events: list[IncidentEvent],
        template_id: int | None = None,
    ) -> RelatedSignal:
        """Attach ``sig`` to ``root`` as a new related signal, on the root's timeline."""
        assert root.id is not None
        details = (
            dict(sig.details)
            if template_id is None
            else {**sig.details, "template_id": template_id}
        )
        row = RelatedSignal(
            incident_id=root.id,
            fingerprint=fingerprint,
            check_key=sig.check_key,
            monitor_id=sig.monitor_id,
            service=self.service(sig.monitor_id),
            source=sig.source,
            target=sig.target,
            kind=sig.kind,
            severity=sig.severity.value,
            message=sig.message,
            count=sig.count,
            status=EVENT if is_event(sig) else FIRING,
            first_seen=sig.observed_at,
            last_seen=sig.observed_at,
            details=details,
        )
        session.add(row)
        session.flush()
        reached("triage.correlated")  # joined, in the batch's transaction: not committed yet
        root.last_seen = max(root.last_seen, sig.observed_at)
        root.severity = max_severity(root.severity, sig.severity.value)
        session.add(root)
        record(
            session,
            root,
            "related",
            f"{signal_line(sig.kind, sig.target, sig.count)} joined from monitor "
            f"{sig.monitor_id}: {sig.message}",
            actor=ACTOR,
            related_id=row.id,
            monitor=sig.monitor_id,
            service=row.service,
            kind=sig.kind,
            target=sig.target,
            fingerprint=fingerprint,
        )
        joined = incident_event(root, "related")
        line = signal_line(sig.kind, sig.target, sig.count)
        events.append(replace(joined, title=f"{line} joined {root.title}"))
        return row

    # -- checks passing ------------------------------------------------------------------------

    def passed(self, session: Session, check_key: str) -> None:
        """Mark the firing related signals of ``check_key`` (on open roots) as passing."""
        rows = session.exec(
            select(RelatedSignal)
            .join(Incident, col(Incident.id) == col(RelatedSignal.incident_id))
            .where(
                RelatedSignal.check_key == check_key,
                RelatedSignal.status == FIRING,
                col(Incident.state).in_(ACTIVE_STATES),
            )
        ).all()
        for row in rows:
            row.status = OK
            session.add(row)

    def holds(self, session: Session, incident: Incident) -> bool:
        """Whether a related signal of ``incident`` still fires (it must not resolve yet);
        one whose monitor no longer names a service (removed, or edited) holds nothing."""
        monitors = session.exec(
            select(RelatedSignal.monitor_id).where(
                RelatedSignal.incident_id == incident.id, RelatedSignal.status == FIRING
            )
        ).all()
        return any(m in self.services.monitors for m in monitors)


def related_of(session: Session, incident_id: int) -> list[RelatedSignal]:
    """The related signals of an incident, in the order they joined."""
    return list(
        session.exec(
            select(RelatedSignal)
            .where(RelatedSignal.incident_id == incident_id)
            .order_by(col(RelatedSignal.id))
        ).all()
    )
