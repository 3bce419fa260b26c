"""Monitors: the Monitor port and one module per kind of target."""

from __future__ import annotations

from guard.config import Settings
from guard.monitors.base import (
    BaseliningMonitor,
    Emit,
    Monitor,
    StreamingMonitor,
    TargetedMonitor,
)
from guard.playbooks.models import (
    DockerMonitorSpec,
    HttpMonitorSpec,
    JournaldMonitorSpec,
    KubernetesMonitorSpec,
    LogfileMonitorSpec,
    MonitorSpec,
    RailwayMonitorSpec,
)


def build_monitor(spec: MonitorSpec, *, settings: Settings | None = None) -> Monitor:
    """The monitor for one playbook entry (imports each implementation only when used)."""
    if isinstance(spec, LogfileMonitorSpec):
        from guard.monitors.logfile import LogfileMonitor

        return LogfileMonitor(spec)
    if isinstance(spec, HttpMonitorSpec):
        from guard.monitors.http import HttpMonitor

        return HttpMonitor(spec)
    if isinstance(spec, DockerMonitorSpec):
        from guard.monitors.docker import DockerMonitor

        return DockerMonitor(spec)
    if isinstance(spec, RailwayMonitorSpec):
        from guard.monitors.railway import RailwayMonitor

        return RailwayMonitor(spec, settings or Settings())
    if isinstance(spec, KubernetesMonitorSpec):
        from guard.monitors.kubernetes import KubernetesMonitor

        return KubernetesMonitor(spec, settings or Settings())
    if isinstance(spec, JournaldMonitorSpec):
        from guard.monitors.journald import JournaldMonitor

        return JournaldMonitor(spec)
    raise TypeError(f"no monitor for {type(spec).__name__}")


__all__ = [
    "BaseliningMonitor",
    "Emit",
    "Monitor",
    "StreamingMonitor",
    "TargetedMonitor",
    "build_monitor",
]
