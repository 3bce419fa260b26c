"""Playbook files (``playbooks/*.yaml``): what to watch, and how to tell that it is broken.

Each monitor entry is one of the ``*MonitorSpec`` models, chosen by its ``type``. Models forbid
unknown fields so a typo is an error, not a silently ignored setting.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from guard.durations import Duration
from guard.grouping.headers import format_problem
from guard.grouping.rules import group_by_problem
from guard.records import Severity
from guard.sandbox.base import SandboxGrants
from guard.validation import valid_regex

_ID = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"

GroupBy = Literal["template", "rule"] | list[str]
_GROUP_BY_HELP = (
    "which lines are one incident: template (the event template, default), rule "
    "(every line of the rule), or a list of the pattern's named groups"
)


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class LogRule(_Spec):
    """A line that matches ``pattern`` is a signal of ``kind``."""

    kind: str = Field(
        pattern=r"^[a-z0-9_.-]+$", description="machine name, e.g. db_too_many_connections"
    )
    pattern: str = Field(description="a regular expression searched in each line")
    severity: Severity = Severity.error
    ignore_case: bool = False
    group_by: GroupBy | None = Field(
        default=None, description=_GROUP_BY_HELP + " (default: the monitor's group_by)"
    )

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        return valid_regex(value) or value

    @field_validator("group_by")
    @classmethod
    def _names_groups(cls, value: GroupBy | None, info: ValidationInfo) -> GroupBy | None:
        problem = group_by_problem(value, info.data.get("pattern", ""))
        if problem:
            raise ValueError(problem)
        return value


MultilinePreset = Literal["auto", "python", "java", "go", "node", "none"]


class MultilineSpec(_Spec):
    """How lines join into one event: a preset's shapes, or a regex for starts or continuations."""

    preset: MultilinePreset = Field(
        default="auto", description="continuation shapes to recognise (ignored with start/continue)"
    )
    start: str | None = Field(
        default=None, description="regex: a line that matches starts an event"
    )
    continue_: str | None = Field(
        default=None, alias="continue", description="regex: a line that matches continues the event"
    )
    max_lines: int = Field(default=200, ge=1, description="lines of one event kept as evidence")
    max_bytes: int = Field(
        default=65536, ge=256, description="bytes of one event kept (evidence; an event held back)"
    )
    flush_after: Duration = Field(
        default=1.0, description="an event with no new line for this long is complete"
    )

    @field_validator("start", "continue_")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        return valid_regex(value)

    @model_validator(mode="after")
    def _one_way(self) -> MultilineSpec:
        if self.start is not None and self.continue_ is not None:
            raise ValueError("give start or continue, not both")
        return self


class _LogRules(_Spec):
    """What a monitor with log rules says about grouping them."""

    multiline: MultilinePreset | MultilineSpec = Field(
        default="auto",
        description="multi-line events: auto (default), python, java, go, node, none, or "
        "{start: REGEX} / {continue: REGEX} with max_lines, max_bytes, flush_after",
    )

    group_by: GroupBy = Field(default="template", description=_GROUP_BY_HELP)
    format: str = Field(
        default="auto",
        description="the lines' header: auto (detect), a preset (syslog, iso, "
        "log4j, oslo, postgres, nginx-error, apache-error, glog, logcat, windows-cbs) or a "
        "pattern with a (?P<message>...) group",
    )

    @field_validator("format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        problem = format_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @property
    def multiline_spec(self) -> MultilineSpec:
        """``multiline`` as a ``MultilineSpec`` (a preset name is its shapes, default limits)."""
        if isinstance(self.multiline, str):
            return MultilineSpec(preset=self.multiline)
        return self.multiline

    def _rules_have_groups(self, rules: list[LogRule]) -> None:
        for rule in rules:
            problem = (
                None if rule.group_by is not None else group_by_problem(self.group_by, rule.pattern)
            )
            if problem:
                raise ValueError(f"group_by: rule {rule.kind!r}: {problem}")


class _MonitorBase(_Spec):
    id: str = Field(pattern=_ID, description="unique across all playbooks")
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


class LogfileMonitorSpec(_MonitorBase, _LogRules):
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


class HttpMonitorSpec(_MonitorBase):
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


class DockerSelector(_Spec):
    label: str | list[str] | None = Field(default=None, description="key=value or key")
    name: str | None = Field(default=None, description="container name (substring match)")

    @property
    def labels(self) -> list[str]:
        if self.label is None:
            return []
        return [self.label] if isinstance(self.label, str) else list(self.label)


class DockerMonitorSpec(_MonitorBase, _LogRules):
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


class RailwayMonitorSpec(_MonitorBase, _LogRules):
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


class KubernetesMonitorSpec(_MonitorBase, _LogRules):
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


class JournaldMonitorSpec(_MonitorBase, _LogRules):
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


MonitorSpec = Annotated[
    LogfileMonitorSpec
    | HttpMonitorSpec
    | DockerMonitorSpec
    | RailwayMonitorSpec
    | KubernetesMonitorSpec
    | JournaldMonitorSpec,
    Field(discriminator="type"),
]
MONITOR_TYPES = ("logfile", "http", "docker", "railway", "kubernetes", "journald")


class Diagnostic(_Spec):
    """A read-only command run in the sandbox when one of this playbook's incidents opens."""

    run: str = Field(description="shell command; {{ incident.* }} values are shell-quoted")
    kinds: list[str] = Field(default_factory=list, description="only for these kinds (default all)")
    timeout: Duration = 30.0


class Playbook(_Spec):
    """One playbook file."""

    name: str = Field(pattern=_ID)
    description: str = ""
    monitors: list[MonitorSpec] = Field(default_factory=list)
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
