"""The sections that keep secrets safe: redaction patterns and the audit chain's key."""

from __future__ import annotations

import re

from pydantic import Field, SecretStr, field_validator

from guard.config.validators import Section, valid_regex
from guard.durations import Duration


class ExtraPatternSettings(Section):
    pattern: str = Field(description="a regex; its first group, if any, is the secret")
    kind: str = Field(default="custom", description="the placeholder's name: [REDACTED:<kind>]")

    @field_validator("pattern")
    @classmethod
    def _regex(cls, value: str) -> str:
        return valid_regex("", value, secret=True)

    @field_validator("kind")
    @classmethod
    def _kind(cls, value: str) -> str:
        if not re.fullmatch(r"[a-z]+(?:-[a-z]+)*", value):
            raise ValueError(f"{value!r}: lower-case letters and dashes only, e.g. 'acme-api-key'")
        return value


class RedactSettings(Section):
    extra_patterns: list[ExtraPatternSettings] = Field(
        default_factory=list, description="more secret shapes: a regex, or {pattern, kind}"
    )
    allow: list[str] = Field(
        default_factory=list,
        description="regexes: a match found in one of these is not a secret (false positives)",
    )

    @field_validator("extra_patterns", mode="before")
    @classmethod
    def _plain_strings(cls, value: object) -> object:
        if isinstance(value, list):
            return [{"pattern": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("allow")
    @classmethod
    def _allow(cls, value: list[str]) -> list[str]:
        return [valid_regex(f"[{i}] ", v) for i, v in enumerate(value)]


class AuditSettings(Section):
    anchor_every: Duration = Field(
        default=3600.0,
        description="how often `guard run` appends "
        "the chain's head to data_dir/audit-anchors.jsonl (0: never)",
    )
    key: SecretStr | None = Field(
        default=None,
        description="HMAC key: entries written with it cannot be recomputed without it",
    )

    @field_validator("key")
    @classmethod
    def _long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < 16:
            raise ValueError("at least 16 characters (e.g. `openssl rand -hex 32`)")
        return value
