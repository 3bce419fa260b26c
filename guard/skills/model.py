"""The skill format: ``skills/<name>/SKILL.md`` (for people and other agents) plus
``skill.yaml`` (for Guard) and optional ``scripts/``.

``SKILL.md`` frontmatter follows the agentskills.io specification exactly: only ``name``,
``description``, ``license``, ``compatibility``, ``metadata`` (string map) and ``allowed-tools``;
``name`` is at most 64 lowercase letters, digits and single hyphens and equals the folder name.
Its body has the sections When to use / Procedure / Pitfalls / Verification.

``skill.yaml`` says when the skill applies (``triggers``), what it does (``steps``: ``run`` in
the sandbox, an ``action`` brokered by Guard, ``wait``, ``verify``), what the sandbox may have
(``grants``), how often it may run (``limits``), whether it may run unasked (``trust``) and where
it came from (``origin``). Step arguments are Jinja2 templates over the incident.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from guard.domain.durations import Duration
from guard.sandbox.base import SandboxGrants
from guard.util.saferegex import RuleSet
from guard.util.validation import valid_regex

NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
REQUIRED_SECTIONS = ("When to use", "Procedure", "Pitfalls", "Verification")


class SkillFrontmatter(BaseModel):
    """agentskills.io frontmatter: these keys and no others."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = Field(min_length=1, max_length=64)
    description: str = Field(min_length=1, max_length=1024)
    license: str | None = None
    compatibility: str | None = Field(default=None, max_length=500)
    metadata: dict[str, str] = Field(default_factory=dict)
    allowed_tools: str | None = Field(default=None, alias="allowed-tools")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NAME_RE.match(value):
            raise ValueError(
                f"invalid skill name {value!r}: lowercase letters, digits and single hyphens, "
                "not starting or ending with a hyphen"
            )
        return value


TRIGGER_TEXT = 65536  # a trigger's regex sees at most this much of a message


@lru_cache(maxsize=1024)
def _message_rules(pattern: str) -> RuleSet:
    """A trigger's message regex, matched by the bounded engines (never a stalled loop)."""
    return RuleSet([(pattern, False)], per_line=0.05, per_batch=0.05)


class Trigger(BaseModel):
    """Matches an incident; every field given must match."""

    model_config = ConfigDict(extra="forbid")

    source: str | None = None
    kind: str | None = None
    target: str | None = Field(default=None, description="glob, e.g. 'api-*'")
    message: str | None = Field(default=None, description="regex searched in the message")
    rule: str | None = Field(
        default=None,
        description="the log rule's pattern, exactly as the playbook has it: every line that "
        "rule matched, whatever its wording (learned skills trigger on it)",
    )

    @field_validator("message")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        return valid_regex(value)

    def match(self, incident: Any) -> tuple[int, list[str]] | None:
        """``(score, reasons)`` when this trigger matches ``incident``, else ``None``."""
        score, reasons = 0, []
        for field in ("source", "kind"):
            want = getattr(self, field)
            if want is not None:
                if getattr(incident, field) != want:
                    return None
                score += 2
                reasons.append(f"{field}={want}")
        if self.target is not None:
            if not fnmatchcase(incident.target, self.target):
                return None
            exact = self.target == incident.target
            score += 3 if exact else 1
            reasons.append(f"target {'=' if exact else '~'} {self.target}")
        if self.message is not None:
            if _message_rules(self.message).first(incident.message[:TRIGGER_TEXT]) is None:
                return None
            score += 2
            reasons.append(f"message ~ /{self.message}/")
        if self.rule is not None:
            if (getattr(incident, "details", None) or {}).get("rule") != self.rule:
                return None
            score += 2
            reasons.append(f"rule /{self.rule}/")
        return score, reasons


class VerifySpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    timeout: Duration = 60.0
    interval: Duration = 2.0
    quiet: Duration = Field(
        default=10.0, description="for log incidents: how long no matching line must appear"
    )
    settle: Duration | None = Field(
        default=None,
        ge=0,
        description="how long the check must keep passing (the same container start) before "
        "it counts; default: agent.settle for a target that can flap, else none",
    )


class Step(BaseModel):
    """Exactly one of ``run``, ``action``, ``wait``, ``verify``."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    run: str | None = Field(default=None, description="a script in scripts/ or a shell command")
    action: str | None = Field(default=None, description="e.g. docker.restart")
    args: dict[str, Any] = Field(default_factory=dict)
    wait: Duration | None = None
    verify: VerifySpec | None = None
    timeout: Duration | None = None
    stdin: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _verify_shorthand(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("verify") is True:  # `verify: true`
            data = {**data, "verify": {}}
        return data

    @model_validator(mode="after")
    def _exactly_one(self) -> Step:
        given = [k for k in ("run", "action", "wait", "verify") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                "a step needs exactly one of run, action, wait, verify"
                + (f" (got {', '.join(given)})" if given else "")
            )
        return self

    @property
    def kind(self) -> Literal["run", "action", "wait", "verify"]:
        for k in ("run", "action", "wait", "verify"):
            if getattr(self, k) is not None:
                return k  # type: ignore[return-value]
        raise AssertionError("unreachable")

    def describe(self) -> str:
        if self.name:
            return self.name
        if self.run is not None:
            return f"run {self.run}"
        if self.action is not None:
            args = " ".join(f"{k}={v}" for k, v in self.args.items())
            return f"{self.action} {args}".strip()
        if self.wait is not None:
            return f"wait {self.wait:g}s"
        return "verify recovery"


class Limits(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_runs: int = Field(default=3, ge=1, description="runs per target within window")
    window: Duration = 3600.0


class SkillSpec(BaseModel):
    """``skill.yaml``."""

    model_config = ConfigDict(extra="forbid")

    triggers: list[Trigger] = Field(min_length=1)
    diagnostics: list[Step] = Field(default_factory=list, description="run steps for evidence")
    steps: list[Step] = Field(min_length=1)
    grants: SandboxGrants = Field(default_factory=SandboxGrants)
    limits: Limits = Field(default_factory=Limits)
    trust: Literal["trusted", "approval", "disabled"] = "approval"
    origin: Literal["builtin", "learned", "manual"] = "manual"
    learned_from: dict[str, Any] = Field(default_factory=dict)
    revision: int = Field(default=1, ge=1, description="bumped by each learned revision")

    @field_validator("diagnostics")
    @classmethod
    def _diagnostics_run(cls, steps: list[Step]) -> list[Step]:
        for step in steps:
            if step.kind not in ("run", "action"):
                raise ValueError("diagnostics may only be run or action steps")
        return steps

    @property
    def verifies(self) -> bool:
        return any(s.kind == "verify" for s in self.steps)
