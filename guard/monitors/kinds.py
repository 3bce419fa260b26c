"""Monitor kinds: one entry per kind says everything Guard knows about it.

A ``MonitorKind`` is its spec class (the playbook entry: its ``type`` and fields, a model in
``guard.playbooks``), how to build its monitor (the implementation is imported only then, so the
Docker and Kubernetes SDKs load only when such a monitor exists), what it gives an
investigation (``recent_lines``: the target's last lines for the model's ``recent_logs``;
``first_look``: the read-only action run as a diagnostic when nothing else is planned), how
verification re-runs its check (``verification``) and what ``guard check-config`` asks of the
settings. An incident's ``source`` is its kind's ``type``.

``MONITOR_KINDS`` holds the built-in kinds; ``register_monitor_kind`` adds one (its spec joins
the playbook union). ``build_monitor``, the playbook schema, the investigation's tools and
verification all read this table; nothing else branches on a monitor's type.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from guard.config import Settings
from guard.monitors import evidence
from guard.monitors.base import Monitor
from guard.playbooks.models import (
    DockerMonitorSpec,
    HostMonitorSpec,
    HttpMonitorSpec,
    JournaldMonitorSpec,
    KubernetesMonitorSpec,
    LogfileMonitorSpec,
    MonitorSpecBase,
    RailwayMonitorSpec,
    ResourcesMonitorSpec,
    TlsMonitorSpec,
    register_monitor_spec,
    spec_type,
    unregister_monitor_spec,
)

SpecT = TypeVar("SpecT", bound=MonitorSpecBase)
RecentLines = Callable[[Any, int, evidence.RunAction], Awaitable[str]]


@dataclass(frozen=True)
class Verification:
    """How verification re-runs a kind's check after a remedy.

    ``reads_state``: the check starts from the running monitor's saved state (Railway: the ids
    it resolved), read but never written. ``log_rules_only``: every incident of the kind is a
    log rule's (it has no ``ok``; it passes once ``quiet`` goes by with no new line)."""

    reads_state: bool = False
    log_rules_only: bool = False


@dataclass(frozen=True)
class FirstLook:
    """A read-only action run as a diagnostic when no playbook or skill plans one."""

    action: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MonitorKind(Generic[SpecT]):
    """One kind of monitor: its spec, its builder, and what it gives an investigation."""

    spec: type[SpecT]
    build: Callable[[SpecT, Settings | None], Monitor]
    recent_lines: RecentLines | None = None
    first_look: FirstLook | None = None
    verification: Verification = Verification()
    config_problem: Callable[[Settings], str | None] | None = None
    # its check asks each target about its state now (a request, a login, a reading), so a
    # failure asked before its incident was resolved is re-asked by the next check: its
    # signals carry when the check began (``Signal.started_at``). A log read is not a probe:
    # a line it finds may be newer than its start and is never read again.
    probe: bool = False

    @property
    def type(self) -> str:
        """The playbook ``type`` (and the incidents' ``source``) of this kind."""
        return spec_type(self.spec)


def _logfile(spec: LogfileMonitorSpec, settings: Settings | None) -> Monitor:
    from guard.monitors.logfile import LogfileMonitor

    return LogfileMonitor(spec)


def _http(spec: HttpMonitorSpec, settings: Settings | None) -> Monitor:
    from guard.monitors.http import HttpMonitor

    return HttpMonitor(spec)


def _docker(spec: DockerMonitorSpec, settings: Settings | None) -> Monitor:
    from guard.monitors.docker import DockerMonitor

    return DockerMonitor(spec)


def _railway(spec: RailwayMonitorSpec, settings: Settings | None) -> Monitor:
    from guard.monitors.railway import RailwayMonitor

    return RailwayMonitor(spec, settings or Settings())


def _kubernetes(spec: KubernetesMonitorSpec, settings: Settings | None) -> Monitor:
    from guard.monitors.kubernetes import KubernetesMonitor

    return KubernetesMonitor(spec, settings or Settings())


def _host(spec: HostMonitorSpec, settings: Settings | None) -> Monitor:
    from guard.monitors.host import HostMonitor

    return HostMonitor(spec, settings or Settings())


def _journald(spec: JournaldMonitorSpec, settings: Settings | None) -> Monitor:
    if spec.host is not None:  # the same kind, read over SSH (docs/HOSTS.md)
        from guard.monitors.ssh_journal import RemoteJournalMonitor

        return RemoteJournalMonitor(spec, settings or Settings())
    from guard.monitors.journald import JournaldMonitor

    return JournaldMonitor(spec)


def _resources(spec: ResourcesMonitorSpec, settings: Settings | None) -> Monitor:
    from guard.monitors.resources import ResourcesMonitor

    return ResourcesMonitor(spec, settings)


def _tls(spec: TlsMonitorSpec, settings: Settings | None) -> Monitor:
    from guard.monitors.tls import TlsMonitor

    return TlsMonitor(spec)


def _kubeconfig_problem(settings: Settings) -> str | None:
    from guard.k8s.client import cleartext_problem

    problem = cleartext_problem(settings.kubernetes)
    return f"kubernetes.kubeconfig: {problem}" if problem else None


_BUILTIN: tuple[MonitorKind[Any], ...] = (
    MonitorKind(
        LogfileMonitorSpec,
        _logfile,
        recent_lines=evidence.file_tail,
        verification=Verification(log_rules_only=True),
    ),
    MonitorKind(HttpMonitorSpec, _http, probe=True),
    MonitorKind(
        DockerMonitorSpec,
        _docker,
        recent_lines=evidence.container_logs("docker.logs"),
        first_look=FirstLook("docker.logs", {"tail": 30}),
    ),
    MonitorKind(RailwayMonitorSpec, _railway, verification=Verification(reads_state=True)),
    MonitorKind(
        KubernetesMonitorSpec,
        _kubernetes,
        recent_lines=evidence.pod_logs,
        config_problem=_kubeconfig_problem,
    ),
    MonitorKind(JournaldMonitorSpec, _journald, recent_lines=evidence.journal_tail),
    MonitorKind(HostMonitorSpec, _host, probe=True),
    MonitorKind(ResourcesMonitorSpec, _resources, probe=True),
    MonitorKind(TlsMonitorSpec, _tls, probe=True),
)
MONITOR_KINDS: dict[str, MonitorKind[Any]] = {kind.type: kind for kind in _BUILTIN}


def monitor_kind(name: str) -> MonitorKind[Any] | None:
    """The kind whose ``type`` (an incident's ``source``) is ``name``, if one is registered."""
    return MONITOR_KINDS.get(name)


def register_monitor_kind(kind: MonitorKind[Any]) -> MonitorKind[Any]:
    """Add ``kind``: playbooks accept its ``type`` and everything that reads the table sees it.

    The playbook model's discriminated union is closed when it is built, so this rebuilds it
    (``guard.playbooks.models.register_monitor_spec``); playbooks loaded before keep theirs."""
    if kind.type in MONITOR_KINDS:
        raise ValueError(f"monitor type {kind.type!r} is already registered")
    register_monitor_spec(kind.spec)
    MONITOR_KINDS[kind.type] = kind
    return kind


def unregister_monitor_kind(name: str) -> None:
    """Remove the kind ``name`` (tests that registered one undo it)."""
    if MONITOR_KINDS.pop(name, None) is not None:
        unregister_monitor_spec(name)
