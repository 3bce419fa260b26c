"""The sections that keep secrets safe and say who may act: redaction patterns, the audit
chain's key, and access (roles, the trusted proxy)."""

from __future__ import annotations

import ipaddress
import re
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator, model_validator

from guard.config.validators import Section, valid_regex
from guard.domain.durations import Duration


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


def origin_key(origin: str) -> tuple[str, str, int] | None:
    """A web origin (``https://host[:port]``) as scheme, host and port, compared alike
    whatever its case or default port; None: not an http(s) origin (``null``, a path...)."""
    try:
        u = urlsplit(origin.strip().lower())
        port = u.port
    except ValueError:
        return None
    if u.scheme not in ("http", "https") or not u.hostname or u.username is not None:
        return None
    if u.path not in ("", "/") or u.query or u.fragment:
        return None
    return u.scheme, u.hostname, port or (443 if u.scheme == "https" else 80)


RoleName = Literal["viewer", "operator", "approver", "admin"]  # guard.access.roles.Role
_HEADER = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+")  # an HTTP header name (RFC 9110 token)


class AccessSettings(Section):
    telegram: dict[int, RoleName] = Field(
        default_factory=dict,
        description="Telegram user id -> role (viewer, operator, approver, admin); an id only "
        "in telegram.allowed_user_ids is an approver",
    )
    slack: dict[str, RoleName] = Field(
        default_factory=dict, description="Slack user id (U...) -> role, like access.telegram"
    )
    matrix: dict[str, RoleName] = Field(
        default_factory=dict, description='Matrix id ("@ops:example.org") -> role, as telegram'
    )
    proxy_header: str | None = Field(
        default=None,
        description="a header (e.g. X-Forwarded-User) naming the signed-in user, who must "
        "be a live token (`guard access token create NAME`; its role applies), believed "
        "only from access.trusted_proxies",
    )
    trusted_proxies: list[str] = Field(
        default_factory=list,
        description="addresses or networks (10.0.0.0/8) of the proxies whose proxy_header, "
        "X-Forwarded-Proto and last X-Forwarded-For hop are believed, when one is the TCP peer",
    )
    mcp_allowed_origins: list[str] = Field(
        default_factory=list,
        description="web origins (https://agent.example.com) whose pages may call /mcp, "
        "besides Guard's own; a request without an Origin header (a CLI agent) is always let in",
    )
    mcp_sessions_per_token: int = Field(
        default=32,
        ge=1,
        le=10000,
        description="MCP sessions one token may hold open over HTTP at once; past it, opening "
        "another is refused (429) until one ends or idles out",
    )

    @field_validator("proxy_header")
    @classmethod
    def _header(cls, value: str | None) -> str | None:
        if value is not None and not _HEADER.fullmatch(value):
            raise ValueError(f"{value!r} is not an HTTP header name (e.g. X-Forwarded-User)")
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, value: list[str]) -> list[str]:
        for i, item in enumerate(value):
            try:
                ipaddress.ip_network(item, strict=False)
            except ValueError:
                raise ValueError(
                    f"[{i}] {item!r} is not an IP address or network (e.g. 10.0.0.5, 10.0.0.0/8)"
                ) from None
        return value

    @field_validator("mcp_allowed_origins")
    @classmethod
    def _origins(cls, value: list[str]) -> list[str]:
        for i, item in enumerate(value):
            if origin_key(item) is None:
                raise ValueError(
                    f"[{i}] {item!r} is not a web origin: scheme://host[:port], no path "
                    "(e.g. https://agent.example.com)"
                )
        return value

    @model_validator(mode="after")
    def _proxy_needs_proxies(self) -> AccessSettings:
        if self.proxy_header is not None and not self.trusted_proxies:
            raise ValueError(
                "access.proxy_header needs access.trusted_proxies: without them any client "
                "could send the header and sign in as anyone"
            )
        return self
