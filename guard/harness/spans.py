"""Spans: a bench-only log of when one incident reached each step of its path (off by default).

``mark(point, key)`` notes ``time.monotonic()`` for ``point`` (``SPANS``) and ``key`` (the
target, a container's name) while a ``recording()`` is open; otherwise it costs one comparison.
``bench.mttr`` and ``bench.detection`` use it to say where the time between a kill and a
verified check goes (docs/BENCHMARKS.md). This module imports nothing from Guard.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["SPANS", "Mark", "enabled", "mark", "recording"]

# Every point Guard marks, in the order one healed incident reaches them.
SPANS: dict[str, str] = {
    "event.received": "the Docker monitor got the engine's event (die, start)",
    "signal.queued": "its signal is on the triage queue",
    "triage.taken": "a triage batch holding the signal starts (in triage's thread)",
    "incident.stored": "the batch is committed: the incident is open",
    "agent.picked": "an incident worker has loaded the incident",
    "recall.done": "matching skills ranked (semantic memory asked)",
    "diagnosis.done": "the skill's read-only diagnostics ran",
    "action.start": "the remedy's action starts",
    "action.end": "the remedy's action returned",
    "verify.check": "one verification check returned (passed or not)",
    "resolved": "the incident is stored resolved",
}

Mark = tuple[str, str, float]  # point, key, time.monotonic()
_log: list[Mark] | None = None


def mark(point: str, key: object = "") -> None:
    """Guard reached ``point`` for ``key`` (recorded only inside ``recording()``)."""
    if _log is not None:
        _log.append((point, str(key), time.monotonic()))  # list.append: thread-safe


def enabled() -> bool:
    """Whether marks are being recorded (to skip building their keys otherwise)."""
    return _log is not None


@contextmanager
def recording() -> Iterator[list[Mark]]:
    """Record every ``mark`` until the block ends; yields the (growing) list."""
    global _log
    found: list[Mark] = []
    _log = found
    try:
        yield found
    finally:
        _log = None
