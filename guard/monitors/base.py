"""The Monitor port: something that observes a target and reports ``Signal``s.

A monitor is polled (``check``) on a schedule; one that can also follow an event stream
implements ``follow`` too and is then run as a long-lived task. Monitors hold no durable state
of their own: ``check`` receives the state the previous run returned (a log offset, a cursor)
and returns the new state in its ``Observation``; the runner persists it atomically with the
incidents the signals open. A monitor that cannot observe raises ``MonitorError``; the runner
turns that into a ``monitor_error`` signal instead of crashing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from guard.domain.records import Observation, Signal

Emit = Callable[[Observation], Awaitable[None]]


@runtime_checkable
class Monitor(Protocol):
    """Observes one kind of target; built from a playbook entry."""

    id: str
    type: str
    interval: float  # seconds between scheduled checks
    jitter: float

    async def check(self, state: Mapping[str, Any]) -> Observation:
        """Observe once. ``state`` is what the previous ``Observation.state`` held (or ``{}``)."""
        ...

    async def close(self) -> None:
        """Release clients and files."""
        ...


@runtime_checkable
class StreamingMonitor(Monitor, Protocol):
    """A monitor that can also follow a stream of events for sub-second detection."""

    async def follow(self, emit: Emit) -> None:
        """Run until cancelled, calling ``emit`` for each observation; raise on a lost stream."""
        ...


@runtime_checkable
class TargetedMonitor(Monitor, Protocol):
    """A monitor that can look at one of its targets alone (verification does, after a remedy)."""

    async def check_target(self, target: str) -> Observation:
        """Observe ``target`` once, as ``check`` would: its signal, or none if it is not found."""
        ...


@runtime_checkable
class BaseliningMonitor(Monitor, Protocol):
    """A monitor that starts "from now" and must fix where now is when ``guard run`` starts."""

    def baseline(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        """The state to start from when ``state`` is empty, else ``None``. Runs before checks."""
        ...


def spec_signal(
    spec: Any, source: str, target: str, kind: str, message: str, details: dict[str, Any],
    *, ok: bool = False,
) -> Signal:  # fmt: skip
    """A signal of the monitor built from ``spec`` (its ``id`` and ``severity``)."""
    return Signal(
        monitor_id=spec.id,
        source=source,
        target=target,
        kind=kind,
        message=message,
        status="ok" if ok else "firing",
        severity=spec.severity,
        details=details,
    )
