"""A dependant's symptoms wait ``triage.symptom_wait`` before they open an incident.

When the app dies, nginx's "connect() failed" line and the app's own ``container_restarting``
reach triage within a second of each other, in either order. Correlation makes the first
incident the root, so when the symptom came first the cause joined *its* incident, and the
skill that heals the cause was no candidate (issue 40: Guard asked instead of healing).

So a firing signal that would open (or reopen) an incident, from a service that depends on
another one some monitor watches, waits: it is held for ``symptom_wait`` seconds after it was
observed (as Alertmanager's ``group_wait``), then triaged again at the end of a batch: by then the
cause's incident, if there is one, is open and the symptom joins it. A death (a container's
exit, OOM kill, restart) never waits: it is a fault of its own. Nor does a signal that finds a
root at once, or lands on an open incident.

Held signals are stored in the batch's transaction (the state key ``triage:waiting``), so a
restart loses none: the next leader releases them when due. Repeats of one held signal fold
into one (its count); past ``MOST`` held, a signal does not wait (a storm is the storm
breaker's).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import Session

from guard.domain.records import Grouping, Severity, Signal, utcnow
from guard.playbooks.services import ServiceMap
from guard.store.state import get_state
from guard.triage.correlation import DEATHS

KEY = "triage:waiting"
MOST = 200  # held signals; beyond, a symptom opens at once


def as_state(sig: Signal) -> dict[str, Any]:
    """``sig`` as JSON (for the store)."""
    grouping = sig.grouping
    return {
        "monitor_id": sig.monitor_id,
        "source": sig.source,
        "target": sig.target,
        "kind": sig.kind,
        "message": sig.message,
        "severity": sig.severity.value,
        "count": sig.count,
        "observed_at": sig.observed_at.isoformat(),
        "started_at": sig.started_at.isoformat() if sig.started_at else None,
        "details": sig.details,
        "check": sig.check,
        "grouping": None
        if grouping is None
        else {"by": grouping.by, "content": grouping.content, "fields": list(grouping.fields)},
    }


def from_state(data: dict[str, Any]) -> Signal:
    """The signal ``as_state`` stored."""
    grouping = data.get("grouping")
    return Signal(
        monitor_id=data["monitor_id"],
        source=data["source"],
        target=data["target"],
        kind=data["kind"],
        message=data["message"],
        severity=Severity(data["severity"]),
        count=int(data["count"]),
        observed_at=datetime.fromisoformat(data["observed_at"]),
        started_at=datetime.fromisoformat(data["started_at"]) if data.get("started_at") else None,
        details=dict(data.get("details") or {}),
        check=data.get("check", ""),
        grouping=None
        if grouping is None
        else Grouping(
            by=grouping["by"],
            content=grouping.get("content", ""),
            fields=tuple((str(k), str(v)) for k, v in grouping.get("fields", [])),
        ),
    )


def _identity(sig: Signal) -> str:
    """Which held signal a repeat folds into: one check's one finding."""
    same = sig.grouping.content if sig.grouping is not None else sig.message
    return f"{sig.check_key}\x00{sig.kind}\x00{same}"


class Waiting:
    """The symptoms held back, by identity; read from the store once, written when changed."""

    def __init__(self, wait: float) -> None:
        self.wait = wait
        self._held: dict[str, Signal] | None = None  # None: not read from the store yet
        self.changed = False

    def waits(self, sig: Signal, services: ServiceMap) -> bool:
        """Whether ``sig`` (about to open or reopen an incident) is a dependant's symptom."""
        if self.wait <= 0 or sig.kind in DEATHS:
            return False
        service = services.service(sig.monitor_id)
        if service is None:
            return False
        watched = set(services.monitors.values())
        return any(need in watched for need in services.dependencies(service))

    def load(self, session: Session) -> None:
        if self._held is None:
            stored = get_state(session, KEY).get("signals", [])
            self._held = {_identity(s): s for s in map(from_state, stored)}

    def forget(self) -> None:
        """Re-read from the store next time (a batch rolled back)."""
        self._held = None
        self.changed = False

    def hold(self, sig: Signal) -> bool:
        """Hold ``sig`` (folded into the one it repeats); False when too many are held."""
        held = self._loaded()
        key = _identity(sig)
        first = held.get(key)
        if first is None and len(held) >= MOST:
            return False
        held[key] = sig if first is None else replace(first, count=first.count + sig.count)
        self.changed = True
        return True

    def due(self, *, everything: bool = False) -> list[Signal]:
        """Take the held signals whose wait is over (all of them with ``everything``)."""
        held = self._loaded()
        until = utcnow() - timedelta(seconds=self.wait)
        ready = [k for k, s in held.items() if everything or s.observed_at <= until]
        if ready:
            self.changed = True
        return [held.pop(k) for k in ready]

    def state(self) -> dict[str, Any]:
        return {"signals": [as_state(s) for s in self._loaded().values()]}

    def _loaded(self) -> dict[str, Signal]:
        if self._held is None:
            raise RuntimeError("Waiting.load(session) first")
        return self._held
