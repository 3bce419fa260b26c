"""Frozen records that flow through the pipeline: monitors emit ``Signal``s, triage emits events.

A ``Signal`` is one observation. ``status="firing"`` means something is wrong with ``target``;
``status="ok"`` means the check that watches ``target`` passed (it resets ``for: N`` counters and
lets an open incident auto-resolve). ``count`` lets a monitor fold many identical observations
(10,000 copies of one log line) into one record without losing the number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


class Severity(StrEnum):
    """How bad an observation is; ordered from least to most severe."""

    info = "info"
    warning = "warning"
    error = "error"
    critical = "critical"

    @property
    def rank(self) -> int:
        return list(Severity).index(self)


class IncidentState(StrEnum):
    """Where an incident is in its life (stored as its plain value; see ``guard.store.models``)."""

    open = "open"
    diagnosing = "diagnosing"
    awaiting_human = "awaiting_human"
    remediating = "remediating"
    resolved = "resolved"
    escalated = "escalated"
    muted = "muted"


@dataclass(frozen=True, slots=True)
class Grouping:
    """How triage tells which incident a log rule's signal belongs to (``group_by``).

    - ``template``: ``content`` is the line's masked tokens (header off); triage mines the
      event template from them, and the template's id is the incident's identity.
    - ``rule``: one incident per rule and target, whatever the message.
    - ``fields``: one incident per value of the rule's named groups (``fields``).
    Signals without a ``Grouping`` (container exits, HTTP checks) are told apart by their
    masked message.
    """

    by: Literal["template", "rule", "fields"]
    content: str = ""
    fields: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Signal:
    """One observation made by a monitor."""

    monitor_id: str
    source: str  # the monitor type: logfile, http, docker, guard (Guard's own failures), ...
    target: str  # what was observed: a file path, a URL, a container name
    kind: str  # a short machine name for what happened: container_exited, http_status, ...
    message: str
    status: Literal["firing", "ok"] = "firing"
    severity: Severity = Severity.error
    count: int = 1
    observed_at: datetime = field(default_factory=utcnow)
    details: dict[str, Any] = field(default_factory=dict)
    grouping: Grouping | None = None
    check: str = ""  # one of many checks by one monitor on one target (an intake source's alerts)
    # when the check that saw it began asking (a probe's request; None: seen when observed): a
    # failure asked before its incident was resolved is older than that verdict
    started_at: datetime | None = None

    @property
    def check_key(self) -> str:
        """Identifies the check that produced this signal: one monitor watching one target
        (and, with ``check``, one of its checks there: an ``ok`` resolves only that one's)."""
        base = f"{self.monitor_id}|{self.target}"
        return f"{base}|{self.check}" if self.check else base


@dataclass(frozen=True, slots=True)
class Observation:
    """What one run of a monitor produced: signals, plus monitor state to persist with them.

    ``state`` (for example a log file's offset) is written in the same transaction as the
    incidents the signals open, so a crash can neither skip nor re-count an observation.
    """

    signals: list[Signal] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    monitor_id: str = ""  # whose ``state`` this is (set by the runner)


@dataclass(frozen=True, slots=True)
class IncidentEvent:
    """Something triage did to an incident (past tense: opened, updated, resolved...)."""

    incident_id: int
    type: str  # opened, reopened, flapping, state_changed
    state: str
    title: str
    severity: str = "error"
    at: datetime = field(default_factory=utcnow)
