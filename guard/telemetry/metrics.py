"""Prometheus metrics: what Guard observed, what it opened, how fast, and how it healed.

One module-level registry (``REGISTRY``), served by ``guard.web.server`` at ``/metrics``.
Counters and
histograms are kept in memory by the process; the incidents-by-state gauge is read from the
database at scrape time instead, so it is right after a restart and across processes sharing a
database. Every label takes values from a bounded set (monitor types, Guard's own and the
playbooks' signal kinds, incident states, a fixed list of outcomes) to keep the series count, and
memory, flat. Outside data never becomes a label: a kind whose tail comes from the watched system
(``k8s_event_<reason>``) counts under its family (``k8s_event``), and the full kind stays on the
signal and its incident; as a last guard, a label takes at most ``MAX_LABEL_VALUES`` values and
counts any later one as ``other`` (logged once).

The pipeline reports through small functions, not through the metric objects, so callers need
not know label names:

- ``count_signals(observations)``: called by the runtime for every triaged batch;
- ``IncidentMetrics(db)``: an incident event hook; times detection (the first signal's
  ``observed_at`` to the incident's ``opened_at``) and repair (``opened_at`` to ``resolved_at``);
- ``record_remediation(outcome)`` and ``observe_sandbox_exec(seconds)``: for the agent loop;
- ``record_page(target, action, outcome)``: for the page worker;
- ``set_monitors(types)`` and ``observe_check_lag(type, seconds)``: for the check scheduler.
"""

from __future__ import annotations

import time
from collections import Counter as Tally
from collections.abc import Iterable, Iterator, Sequence

from loguru import logger
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func
from sqlmodel import col, select

from guard.domain.records import IncidentEvent, Observation
from guard.store.db import Database
from guard.store.models import Incident, IncidentState

__all__ = [
    "CONTENT_TYPE_LATEST",
    "OUTCOMES",
    "REGISTRY",
    "IncidentMetrics",
    "count_signals",
    "kind_label",
    "observe_check_lag",
    "observe_sandbox_exec",
    "record_remediation",
    "render",
    "set_monitors",
    "track_incidents",
]

# No *_created series: they double the output and no dashboard reads them.
disable_created_metrics()  # type: ignore[no-untyped-call]
REGISTRY = CollectorRegistry()
ProcessCollector(registry=REGISTRY)  # process_resident_memory_bytes and friends
# How a remediation ended. A run: ``succeeded`` (verified), ``verify_failed`` (every step ran,
# the check still fails), ``failed`` (a step failed), ``timed_out`` (a sandbox step timed out).
# No run: ``denied`` by a human, ``rate_limited`` or ``blocked`` (circuit breaker) by a runaway
# guard, so it escalated, or ``escalated`` because the agent itself failed. Nothing reports
# ``rolled_back`` yet (skills have no rollback steps); it is kept for dashboards.
OUTCOMES = (
    "succeeded",
    "verify_failed",
    "failed",
    "timed_out",
    "rolled_back",
    "denied",
    "rate_limited",
    "blocked",
    "escalated",
    "other",
)
# Seconds: from sub-second event streams to minutes-long polls.
_DETECTION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
_LAG_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_MTTR_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 43200, 86400)
# Signal kinds made of a family and outside data (guard.monitors.kubernetes names a Warning event
# ``k8s_event_<its reason>``): the label is the family alone.
KIND_FAMILIES = ("k8s_event",)
MAX_LABEL_VALUES = 200  # far above Guard's own kinds and any playbook's rule kinds


class _Bounded:
    """The values one label has taken; past ``most`` of them, a new value is ``other``."""

    def __init__(self, label: str, most: int = MAX_LABEL_VALUES) -> None:
        self.label, self.most = label, most
        self.seen: set[str] = set()
        self.warned = False

    def __call__(self, value: str) -> str:
        if value in self.seen:
            return value
        if len(self.seen) >= self.most:
            if not self.warned:
                self.warned = True
                logger.warning(
                    "metrics: the {} label has {} values already; new ones count as 'other'",
                    self.label,
                    self.most,
                )
            return "other"
        self.seen.add(value)
        return value


def kind_label(kind: str) -> str:
    """The ``kind`` label of a signal kind: its family when its tail is outside data."""
    for family in KIND_FAMILIES:
        if kind.startswith(family + "_"):
            return family
    return _KINDS(kind)


_KINDS = _Bounded("kind")
_SOURCES = _Bounded("source")
_TYPES = _Bounded("type")
_EVENT_TYPES = _Bounded("type")
_HOOKS = _Bounded("source")

LOOP_STALL = Gauge(
    "guard_event_loop_max_stall_seconds",
    "The event loop's longest stall since Guard started (a tick late by this much).",
    registry=REGISTRY,
)
SIGNALS = Counter(
    "guard_signals",
    "Observations made by monitors (folded lines count each).",
    ["source", "kind", "status"],
    registry=REGISTRY,
)
INCIDENT_EVENTS = Counter(
    "guard_incident_events", "Incident events emitted by triage.", ["type"], registry=REGISTRY
)
INTAKE_REQUESTS = Counter(
    "guard_intake_requests",
    "Requests to the intake hooks, by source id (unknown: no such source) and HTTP status.",
    ["source", "code"],
    registry=REGISTRY,
)
REMEDIATIONS = Counter(
    "guard_remediations",
    "Remediations ended (run or refused), by outcome.",
    ["outcome"],
    registry=REGISTRY,
)
PAGES = Counter(
    "guard_pages",
    "Attempts to deliver a page, by notifier kind (pagerduty, webhook), action (trigger, "
    "acknowledge, resolve) and outcome (sent, retried, failed).",
    ["kind", "action", "outcome"],
    registry=REGISTRY,
)
SANDBOX_EXEC = Histogram(
    "guard_sandbox_exec_seconds", "Wall time of one sandboxed command.", registry=REGISTRY
)
DETECTION = Histogram(
    "guard_detection_latency_seconds",
    "From a fault's first signal to its incident being opened.",
    buckets=_DETECTION_BUCKETS,
    registry=REGISTRY,
)
MTTR = Histogram(
    "guard_time_to_resolve_seconds",
    "From an incident opened to it resolved.",
    buckets=_MTTR_BUCKETS,
    registry=REGISTRY,
)
HEARTBEAT = Gauge(
    "guard_scheduler_heartbeat_timestamp_seconds",
    "Unix time of the scheduler's last heartbeat.",
    registry=REGISTRY,
)
CHECK_LAG = Histogram(
    "guard_check_lag_seconds",
    "How late a scheduled check started (its due time to its start).",
    ["type"],
    buckets=_LAG_BUCKETS,
    registry=REGISTRY,
)
MONITORS = Gauge(
    "guard_monitors", "Monitors on the check schedule, by type.", ["type"], registry=REGISTRY
)
for _outcome in OUTCOMES:
    REMEDIATIONS.labels(_outcome)


def count_signals(observations: Iterable[Observation]) -> None:
    """Count every signal of a batch by source, kind and status."""
    for obs in observations:
        for sig in obs.signals:
            status = sig.status if sig.status in ("firing", "ok") else "other"
            SIGNALS.labels(_SOURCES(sig.source), kind_label(sig.kind), status).inc(sig.count)


def count_intake(source: str, code: int) -> None:
    """Count one hook request; ``source`` is a configured id or ``unknown``."""
    INTAKE_REQUESTS.labels(_HOOKS(source), str(code)).inc()


def record_remediation(outcome: str) -> None:
    """Count one remediation; an outcome outside ``OUTCOMES`` is counted as ``other``."""
    REMEDIATIONS.labels(outcome if outcome in OUTCOMES else "other").inc()


def record_page(target: str, action: str, outcome: str) -> None:
    """Count one attempt at a page to ``target`` (``KIND:NAME``; the name is no label)."""
    kind = target.partition(":")[0]
    PAGES.labels(
        kind if kind in ("pagerduty", "webhook") else "other",
        action if action in ("trigger", "acknowledge", "resolve") else "other",
        outcome if outcome in ("sent", "retried", "failed") else "other",
    ).inc()


def observe_sandbox_exec(seconds: float) -> None:
    """Record how long one sandboxed command took."""
    SANDBOX_EXEC.observe(max(seconds, 0.0))


def set_monitors(types: Iterable[str]) -> None:
    """``guard_monitors{type}``: how many monitors of each type are scheduled."""
    counts = Tally(_TYPES(t) for t in types)
    MONITORS.clear()
    for type_, n in counts.items():
        MONITORS.labels(type_).set(n)


def observe_check_lag(monitor_type: str, seconds: float) -> None:
    """Record how late one scheduled check started."""
    CHECK_LAG.labels(_TYPES(monitor_type)).observe(max(seconds, 0.0))


def beat() -> None:
    HEARTBEAT.set(time.time())


class IncidentMetrics:
    """An incident event hook that times detection and resolution from the stored incident."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def __call__(self, events: Sequence[IncidentEvent]) -> None:
        for ev in events:
            INCIDENT_EVENTS.labels(_EVENT_TYPES(ev.type)).inc()
        timed = [ev for ev in events if ev.type == "opened" or ev.state == IncidentState.resolved]
        if not timed:
            return
        with self.db.session() as session:
            for ev in timed:
                incident = session.get(Incident, ev.incident_id)
                if incident is None:
                    continue
                if ev.type == "opened":
                    lag = (incident.opened_at - incident.first_seen).total_seconds()
                    DETECTION.observe(max(lag, 0.0))
                elif incident.resolved_at is not None:
                    MTTR.observe(
                        max((incident.resolved_at - incident.opened_at).total_seconds(), 0.0)
                    )


class _IncidentStates(Collector):
    """``guard_incidents{state}``: a gauge read from the database when scraped."""

    def __init__(self) -> None:
        self.db: Database | None = None

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily("guard_incidents", "Incidents by state.", labels=["state"])
        counts = dict.fromkeys((s.value for s in IncidentState), 0)
        if self.db is not None:
            try:
                with self.db.session() as session:
                    rows = session.exec(
                        select(Incident.state, func.count()).group_by(col(Incident.state))
                    ).all()
                counts.update({state: n for state, n in rows})
            except Exception as exc:  # a scrape must not fail because the store is down
                logger.warning("metrics: cannot count incidents: {}", exc)
                return
        for state, n in counts.items():
            family.add_metric([state], n)
        yield family

    def describe(self) -> Iterator[Metric]:
        return iter(())


_STATES = _IncidentStates()
REGISTRY.register(_STATES)


def track_incidents(db: Database) -> None:
    """Read ``guard_incidents`` from ``db`` (the process's one appliance database)."""
    _STATES.db = db


def render() -> bytes:
    """The registry in Prometheus' text format (queries the database: call off the loop)."""
    return generate_latest(REGISTRY)


_worst_stall = 0.0


def record_loop_late(late: float) -> None:
    """Keep ``guard_event_loop_max_stall_seconds``: how much later than asked a tick of the
    event loop woke up, at worst (what a hostile log line or a blocking call would show).
    Ticked by ``guard.app.stalls.StallWatch``."""
    global _worst_stall
    if late > _worst_stall:
        _worst_stall = late
        LOOP_STALL.set(round(late, 4))
