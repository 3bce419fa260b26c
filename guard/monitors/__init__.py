"""Monitors: the Monitor port, the table of monitor kinds, and one module per kind of target."""

from __future__ import annotations

from guard.config import Settings
from guard.monitors.base import (
    BaseliningMonitor,
    Emit,
    Monitor,
    StreamingMonitor,
    TargetedMonitor,
)
from guard.monitors.kinds import (
    MONITOR_KINDS,
    FirstLook,
    MonitorKind,
    Verification,
    monitor_kind,
    register_monitor_kind,
    unregister_monitor_kind,
)
from guard.playbooks.models import MonitorSpec


def build_monitor(spec: MonitorSpec, *, settings: Settings | None = None) -> Monitor:
    """The monitor for one playbook entry, built by its kind (which imports its module then)."""
    kind = monitor_kind(spec.type)
    if kind is None or not isinstance(spec, kind.spec):
        raise TypeError(f"no monitor for {type(spec).__name__}")
    return kind.build(spec, settings)


__all__ = [
    "MONITOR_KINDS",
    "BaseliningMonitor",
    "Emit",
    "FirstLook",
    "Monitor",
    "MonitorKind",
    "StreamingMonitor",
    "TargetedMonitor",
    "Verification",
    "build_monitor",
    "monitor_kind",
    "register_monitor_kind",
    "unregister_monitor_kind",
]
