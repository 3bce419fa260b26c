"""Playbook files (``playbooks/*.yaml``): what to watch, and how to tell that it is broken.

Each monitor entry is one of the ``*MonitorSpec`` models, chosen by its ``type``. Models forbid
unknown fields so a typo is an error, not a silently ignored setting. The monitor kinds a
playbook accepts are the registered spec classes (``register_monitor_spec``; the built-in ones
below); ``guard.monitors.kinds`` registers a kind's spec together with its behaviour.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, TypeVar, Union, get_args

from pydantic import Field, field_validator, model_validator
from pydantic.fields import FieldInfo

from guard.domain.durations import Duration
from guard.domain.records import Severity
from guard.playbooks.logrules import ID_PATTERN, LogRulesSpec, SpecModel
from guard.playbooks.logrules import GroupBy as GroupBy  # re-exported: playbook models live here
from guard.playbooks.logrules import LogRule as LogRule
from guard.playbooks.logrules import MultilinePreset as MultilinePreset
from guard.playbooks.logrules import MultilineSpec as MultilineSpec
from guard.playbooks.resources import PodsSelector, Threshold, TrendSpec, usage_problem
from guard.sandbox.base import SandboxGrants
from guard.util.validation import valid_regex


class MonitorSpecBase(SpecModel):
    """The fields every monitor kind has; a kind's spec adds ``type: Literal["name"]``."""

    if TYPE_CHECKING:
        type: str

    id: str = Field(pattern=ID_PATTERN, description="unique across all playbooks")
    enabled: bool = True
    for_count: int = Field(
        default=1,
        ge=1,
        alias="for",
        description="consecutive failing checks before an incident opens",
    )
    auto_resolve: bool | None = Field(
        default=None,
        description="resolve when the check passes again (default: triage.auto_resolve)",
    )
    jitter: Duration = Field(default=0.0, description="random delay added to each scheduled run")
    service: str | None = Field(
        default=None,
        pattern=ID_PATTERN,
        description="the service this monitor watches: incidents of one service (and of the "
        "services it depends_on) within triage.correlate_window become one incident",
    )


class LogfileMonitorSpec(MonitorSpecBase, LogRulesSpec):
    type: Literal["logfile"]
    path: str
    every: Duration = 10.0
    start: Literal["end", "beginning"] = Field(
        default="end", description="where to begin in a file never seen before"
    )
    rules: list[LogRule] = Field(min_length=1)
    max_line_bytes: int = Field(
        default=65536, ge=256, description="longer lines are cut for matching"
    )

    @model_validator(mode="after")
    def _group_names(self) -> LogfileMonitorSpec:
        self._rules_have_groups(self.rules)
        return self


class HttpMonitorSpec(MonitorSpecBase):
    type: Literal["http"]
    url: str = Field(pattern=r"^https?://")
    method: Literal["GET", "HEAD", "POST"] = "GET"
    every: Duration = 30.0
    expect_status: int | list[int] = 200
    timeout: Duration = 10.0
    max_latency: Duration | None = None
    expect_body: str | None = Field(default=None, description="regex the body must contain")
    headers: dict[str, str] = Field(default_factory=dict)
    severity: Severity = Severity.critical
    tls_verify: bool = Field(default=True, description="verify the server's TLS certificate")
    proxy: str | None = Field(
        default=None,
        pattern=r"^(https?|socks5h?)://",
        description="proxy URL (default: HTTP(S)_PROXY from the environment, if set)",
    )

    @field_validator("expect_body")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        return valid_regex(value)

    @property
    def expected_statuses(self) -> list[int]:
        return self.expect_status if isinstance(self.expect_status, list) else [self.expect_status]


class DockerSelector(SpecModel):
    label: str | list[str] | None = Field(default=None, description="key=value or key")
    name: str | None = Field(default=None, description="container name (substring match)")

    @property
    def labels(self) -> list[str]:
        if self.label is None:
            return []
        return [self.label] if isinstance(self.label, str) else list(self.label)


class DockerMonitorSpec(MonitorSpecBase, LogRulesSpec):
    type: Literal["docker"]
    selector: DockerSelector = Field(default_factory=DockerSelector)
    every: Duration = 30.0
    events: bool = Field(default=True, description="also follow the Docker events stream")
    severity: Severity = Severity.critical
    rules: list[LogRule] = Field(
        default_factory=list,
        description="matched against the containers' stdout and stderr (needs events: true)",
    )
    max_line_bytes: int = Field(
        default=65536, ge=256, description="longer lines are cut for matching"
    )

    @model_validator(mode="after")
    def _selects_something(self) -> DockerMonitorSpec:
        if not self.selector.labels and not self.selector.name:
            raise ValueError(
                "selector needs a label or a name (watching every container is unsafe)"
            )
        if self.rules and not self.events:
            raise ValueError("rules follow the containers' logs: they need events: true")
        self._rules_have_groups(self.rules)
        return self


class RailwayMonitorSpec(MonitorSpecBase, LogRulesSpec):
    """A Railway service: its latest deployment's status, and rules over its logs."""

    type: Literal["railway"]
    service: str = Field(description="service name or id")
    environment: str | None = Field(
        default=None, description="environment name or id (default: railway.environment_id)"
    )
    every: Duration = 60.0
    rules: list[LogRule] = Field(
        default_factory=list, description="matched against the deployment's logs"
    )
    build_rules: list[LogRule] = Field(
        default_factory=list, description="matched against the deployment's build logs"
    )
    log_filter: str | None = Field(
        default=None, description="Railway log filter sent with log queries, e.g. @level:error"
    )
    start: Literal["end", "beginning"] = Field(
        default="end", description="where to begin in a deployment's logs never seen before"
    )
    severity: Severity = Severity.critical

    @model_validator(mode="after")
    def _group_names(self) -> RailwayMonitorSpec:
        self._rules_have_groups([*self.rules, *self.build_rules])
        return self


class KubernetesMonitorSpec(MonitorSpecBase, LogRulesSpec):
    """Pods chosen by namespace and label selector, followed through the watch API; ``logs``
    rules over their containers' logs."""

    type: Literal["kubernetes"]
    namespace: str = "default"
    selector: str | None = Field(default=None, description="label selector, e.g. app=api")
    every: Duration = 60.0
    events: bool = Field(default=True, description="also follow the pods watch stream")
    warnings: bool = Field(default=True, description="report Warning events")
    not_ready_after: Duration = Field(
        default=120.0, description="a running pod not ready for this long is a signal"
    )
    severity: Severity = Severity.critical
    logs: list[LogRule] = Field(
        default_factory=list,
        description="matched against the selected pods' container logs (needs events: true)",
    )
    max_line_bytes: int = Field(
        default=65536, ge=256, description="longer lines are cut for matching"
    )
    previous_tail: int = Field(
        default=50,
        ge=0,
        le=1000,
        description="last lines of a crashed container's previous instance attached to the "
        "incident as evidence (0: none)",
    )

    @model_validator(mode="after")
    def _logs_follow(self) -> KubernetesMonitorSpec:
        if self.logs and not self.events:
            raise ValueError("logs follow the pods' containers: they need events: true")
        self._rules_have_groups(self.logs)
        return self

    @property
    def rules(self) -> list[LogRule]:
        """The log rules (``logs``), under the name the other log monitors use."""
        return self.logs


JournalPriority = Literal["emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"]
JOURNAL_PRIORITIES: tuple[str, ...] = get_args(JournalPriority)  # index = syslog level


class JournaldMonitorSpec(MonitorSpecBase, LogRulesSpec):
    """The systemd journal (a mounted journal directory), read by ``journalctl --follow``."""

    type: Literal["journald"]
    units: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=list, description="only these units (journalctl -u; default: all)"
    )
    priority: JournalPriority | Annotated[int, Field(ge=0, le=7)] | None = Field(
        default=None,
        description="only entries this severe or more (journalctl -p): emerg..debug or 0..7",
    )
    directory: str = Field(
        default="/var/log/journal", description="the journal directory (the host's, mounted)"
    )
    host: str | None = Field(
        default=None,
        description="follow this host's journal over SSH instead (a name in hosts:; "
        "docs/HOSTS.md): every unit, journalctl -o json -f through guard-exec",
    )
    every: Duration = 30.0
    start: Literal["end", "beginning"] = Field(
        default="end", description="where to begin in a journal never read before"
    )
    rules: list[LogRule] = Field(min_length=1, description="matched against each MESSAGE")
    max_line_bytes: int = Field(
        default=65536, ge=256, description="longer messages are cut for matching"
    )

    @model_validator(mode="after")
    def _group_names(self) -> JournaldMonitorSpec:
        self._rules_have_groups(self.rules)
        return self

    @property
    def priority_level(self) -> int | None:
        """``priority`` as a syslog level (0 emerg .. 7 debug)."""
        if isinstance(self.priority, str):
            return JOURNAL_PRIORITIES.index(self.priority)
        return self.priority


class ResourcesMonitorSpec(MonitorSpecBase):
    """Usage of containers (``selector``, the engine's stats), pods (``pods``) or a host:
    thresholds held for cycles and a trend to the limit (docs/RESOURCES.md)."""

    type: Literal["resources"]
    selector: DockerSelector | None = None
    pods: PodsSelector | None = Field(default=None, description="Kubernetes pods")
    host: str | None = Field(default=None, description="`local`: the host Guard runs on")
    mounts: list[str] = Field(default_factory=list, description="with host: mounts to watch")
    every: Duration = 15.0
    severity: Severity = Severity.error
    memory: Threshold | None = None
    cpu: Threshold | None = None
    disk: Threshold | None = None
    inodes: Threshold | None = None
    pids: Threshold | None = None
    restarts: Threshold | None = None
    trend: TrendSpec | None = None

    @model_validator(mode="after")
    def _watches_something(self) -> ResourcesMonitorSpec:
        problem = usage_problem(self)
        if problem:
            raise ValueError(problem)
        return self


class TlsMonitorSpec(MonitorSpecBase):
    """A TLS endpoint's certificate: days left, chain and hostname."""

    type: Literal["tls"]
    host: str
    port: int = Field(default=443, ge=1, le=65535)
    server_name: str | None = Field(default=None, description="SNI and hostname (default host)")
    expires_within: Duration = Field(default=14 * 86400.0, description="days left that fire")
    ca_file: str | None = Field(default=None, description="trust this bundle, not the system's")
    verify: bool = Field(default=True, description="an untrusted chain or wrong name fires")
    every: Duration = 3600.0
    timeout: Duration = 10.0
    severity: Severity = Severity.error


MonitorSpec: TypeAlias = MonitorSpecBase  # for type hints: a playbook's monitors are these

S = TypeVar("S", bound=type[MonitorSpecBase])
_SPECS: dict[str, type[MonitorSpecBase]] = {}


def spec_type(spec: type[MonitorSpecBase]) -> str:
    """The ``type`` a spec class answers to (its ``type: Literal["name"]`` field)."""
    field = spec.model_fields.get("type")
    names = get_args(field.annotation) if field is not None else ()
    if len(names) != 1 or not isinstance(names[0], str):
        raise TypeError(f"{spec.__name__} needs a field type: Literal['name']")
    return names[0]


def monitor_types() -> tuple[str, ...]:
    """The monitor ``type`` names a playbook accepts, in registration order."""
    return tuple(_SPECS)


def monitor_union() -> Any:
    """The discriminated union of the registered spec classes (``Playbook.monitors`` items)."""
    return Annotated[Union[tuple(_SPECS.values())], Field(discriminator="type")]  # noqa: UP007


def _add(spec: S) -> S:
    name = spec_type(spec)
    if _SPECS.get(name, spec) is not spec:
        raise ValueError(f"monitor type {name!r} is already registered")
    _SPECS[name] = spec
    return spec


class HostMonitorSpec(MonitorSpecBase):
    """A host of ``hosts:``: that Guard reaches it over SSH, it presents the pinned key, and its
    guard-exec answers (docs/HOSTS.md)."""

    type: Literal["host"]
    host: str = Field(min_length=1, description="the host's name in hosts:")
    every: Duration = 60.0
    severity: Severity = Severity.critical


for _builtin in (
    LogfileMonitorSpec,
    HttpMonitorSpec,
    DockerMonitorSpec,
    RailwayMonitorSpec,
    KubernetesMonitorSpec,
    JournaldMonitorSpec,
    HostMonitorSpec,
    ResourcesMonitorSpec,
    TlsMonitorSpec,
):
    _add(_builtin)


class Diagnostic(SpecModel):
    """Read-only evidence gathered when one of this playbook's incidents opens: a command run
    in the sandbox, or a probe (``action: probe.http``, no sandbox needed; docs/PROBES.md)."""

    run: str | None = Field(
        default=None, description="shell command; {{ incident.* }} values are shell-quoted"
    )
    action: str | None = Field(
        default=None, description="a read-only action (a probe), e.g. probe.tcp, with its args"
    )
    args: dict[str, Any] = Field(default_factory=dict, description="the action's arguments")
    kinds: list[str] = Field(default_factory=list, description="only for these kinds (default all)")
    timeout: Duration = 30.0

    @model_validator(mode="after")
    def _run_or_action(self) -> Diagnostic:
        if (self.run is None) == (self.action is None):
            raise ValueError("a diagnostic needs exactly one of run or action (e.g. probe.http)")
        return self


class ServiceSpec(SpecModel):
    """A service monitors name with ``service:``, and the services it needs."""

    depends_on: list[Annotated[str, Field(pattern=ID_PATTERN)]] = Field(
        default_factory=list,
        description="services this one needs: their open incident absorbs this one's",
    )


class Playbook(SpecModel):
    """One playbook file."""

    name: str = Field(pattern=ID_PATTERN)
    description: str = ""
    services: dict[Annotated[str, Field(pattern=ID_PATTERN)], ServiceSpec] = Field(
        default_factory=dict,
        description="services and their depends_on (see docs/CORRELATION.md)",
    )
    if TYPE_CHECKING:
        monitors: list[MonitorSpec]
    else:
        monitors: list[monitor_union()] = Field(default_factory=list)
    sandbox: SandboxGrants = Field(
        default_factory=SandboxGrants,
        description="what the sandbox may have for this playbook's incidents (default: nothing)",
    )
    investigation_sandbox: SandboxGrants = Field(
        default_factory=SandboxGrants,
        description="what the model's sandbox_run may have while it investigates; never "
        "`sandbox`'s grants (default: nothing: no network, no secrets, no mounts)",
    )
    diagnostics: list[Diagnostic] = Field(default_factory=list)


def _rebuild_playbook() -> None:
    Playbook.model_fields["monitors"] = FieldInfo.from_annotated_attribute(
        list[monitor_union()],  # type: ignore[misc,arg-type]
        Field(default_factory=list),
    )
    Playbook.model_rebuild(force=True)


def register_monitor_spec(spec: S) -> S:
    """Accept ``spec`` (a ``MonitorSpecBase`` with ``type: Literal["name"]``) in playbooks from
    now on: the ``Playbook`` model is rebuilt with it in the union (and in its JSON Schema)."""
    _add(spec)
    _rebuild_playbook()
    return spec


def unregister_monitor_spec(name: str) -> None:
    """Stop accepting monitor ``type`` ``name`` (tests that registered one undo it)."""
    if _SPECS.pop(name, None) is not None:
        _rebuild_playbook()
