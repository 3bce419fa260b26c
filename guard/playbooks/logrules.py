"""The log-rule parts of a playbook's monitor specs: rules, multi-line events, grouping."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from guard.domain.durations import Duration
from guard.domain.records import Severity
from guard.grouping.headers import format_problem
from guard.grouping.rules import group_by_problem
from guard.util.validation import valid_regex

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"

GroupBy = Literal["template", "rule"] | list[str]
_GROUP_BY_HELP = (
    "which lines are one incident: template (the event template), rule (every line of the "
    "rule, on one target), or a list of the pattern's named groups; unset: rule for a rule "
    "naming a fault (disk full), template for a catch-all (., ERROR, Exception|Traceback)"
)


class SpecModel(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class LogRule(SpecModel):
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
    quiet: Duration = Field(
        default=60.0,
        ge=0,
        description="the fault counts as present while a matching line came this recently: "
        "a human's fix is learned only if one came within it before the fix ran",
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


class MultilineSpec(SpecModel):
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


class LogRulesSpec(SpecModel):
    """What a monitor with log rules says about grouping them."""

    multiline: MultilinePreset | MultilineSpec = Field(
        default="auto",
        description="multi-line events: auto (default), python, java, go, node, none, or "
        "{start: REGEX} / {continue: REGEX} with max_lines, max_bytes, flush_after",
    )

    group_by: GroupBy | None = Field(default=None, description=_GROUP_BY_HELP)
    resolve_after: Duration = Field(
        default=600.0,
        description="a log rule's incident resolves once no matching line came for this long "
        "(0: only a person resolves it, `guard resolve ID`)",
    )
    format: str = Field(
        default="auto",
        description="the lines' header: auto (detect), a preset (syslog, iso, "
        "log4j, oslo, postgres, nginx-error, access, apache-error, glog, logcat, windows-cbs) or "
        "a pattern with a (?P<message>...) group (and an optional (?P<event>...) key)",
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
