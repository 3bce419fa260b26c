"""What a read-only CLI command needs from the settings, without pydantic (issue 17).

``guard incidents list`` needs two things from the settings: the database URL and the redaction
policy (``redact.*`` and Guard's own secrets, which it masks on the way out). Loading
``guard.config.Settings`` costs pydantic-settings and pydantic (~0.3 s), so ``resolve`` reads
the same sources the same way (``guard.config.sources`` serves both), strongest first:
``GUARD_<FIELD>`` environment variables (any case, ``__`` nests), then the YAML file
(``--config``, else ``GUARD_CONFIG``, else ``./guard.yaml`` if present), then the defaults
(``data_dir`` from ``RAILWAY_VOLUME_MOUNT_PATH`` or ``./data``; an empty ``database_url`` is
SQLite at ``data_dir/guard.db``).

It answers only when that is plainly what ``load_settings`` would make of them, and returns
None otherwise, for the caller to take the full path: a missing or unreadable file, a top-level
key Guard does not know, a section given as JSON in the environment, a value of a type the
model would refuse, a redaction pattern that does not compile, an audit key that is too short.
What it does not do is validate the rest of the file (``guard check-config`` does): a config
whose unrelated parts are invalid still lists incidents here, where the full path exits 2.
``tests/cli/test_fast_incidents.py`` checks it against ``load_settings`` on a matrix of files
and environments.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from guard.config.credentials import basic_credentials
from guard.config.sources import config_path, default_data_dir
from guard.redact import ExtraPattern, Policy

# ``guard.config.Settings``'s fields (a test keeps the two equal); the sections are models.
FIELDS = frozenset(
    {
        "data_dir",
        "database_url",
        "playbooks_dir",
        "playbooks_watch_every",
        "skills_dir",
        "builtin_skills_dir",
        "public_url",
        "loop_stall_warning",
        "log_level",
        "hosts",  # a table of hosts: their private keys are named, never inline
        "intake",  # a list of sources: their token and hmac_secret are secrets
        "quiet_hours",  # optional: None, or a section
        "routes",  # a list of routes: no secrets
        "log_format",
        "http_host",
        "http_port",
    }
)
SECTIONS = frozenset(
    {
        "telegram",
        "email",
        "slack",
        "matrix",
        "console",
        "chat",
        "railway",
        "kubernetes",
        "compose",
        "sandbox",
        "probes",
        "llm",
        "triage",
        "skills",
        "agent",
        "memory",
        "report",
        "redact",
        "audit",
        "access",
        "ha",
        "scheduler",
        "store",
        "escalation",
        "notifiers",
    }
)
# The secrets ``Settings.secret_values`` masks, in its order (then each ``llm.fallback`` key).
SECRETS = (
    ("telegram", "bot_token"),
    ("email", "password"),
    ("slack", "bot_token"),
    ("slack", "app_token"),
    ("slack", "signing_secret"),
    ("matrix", "access_token"),
    ("railway", "token"),
    ("railway", "project_token"),
    ("llm", "api_key"),
    ("audit", "key"),
    ("skills", "git_token"),
)
_KIND = re.compile(r"[a-z]+(?:-[a-z]+)*")


class Unsure(Exception):
    """The sources hold something only the full settings model can judge."""


@dataclass(frozen=True)
class Resolved:
    """The database URL and the redaction policy's inputs, as ``load_settings`` makes them."""

    database_url: str
    extra_patterns: tuple[tuple[str, str], ...] = ()
    allow: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()

    def policy(self) -> Policy:
        """The policy ``guard.redact.configure`` would build from the full settings."""
        return Policy(
            extra=[ExtraPattern(p, k) for p, k in self.extra_patterns],
            allow=self.allow,
            secrets=self.secrets,
        )


def resolve(
    explicit: str | Path | None, environ: Mapping[str, str] | None = None
) -> Resolved | None:
    """The settings ``guard incidents list`` needs, or None when the full path must decide."""
    env = os.environ if environ is None else environ
    try:
        return _resolve(explicit, env)
    except Unsure:
        return None


def _resolve(explicit: str | Path | None, env: Mapping[str, str]) -> Resolved:
    path = config_path(explicit, env)
    file: dict[str, Any] = _read_yaml(path) if path is not None else {}
    unknown = set(file) - FIELDS - SECTIONS
    if unknown:
        raise Unsure(f"unknown keys {sorted(unknown)}")
    top, nested = _environment(env)
    named = ("telegram", "email", "slack", "railway", "llm", "audit")
    sections = {name: _section(file, name) for name in named}
    sections |= {name: _section(file, name) for name in ("skills", "redact", "matrix")}
    for (section, key), value in nested.items():
        sections[section] = {**sections[section], key: value}

    if "data_dir" in top:
        data_dir = top["data_dir"]
    elif "data_dir" in file:
        data_dir = file["data_dir"]
    else:
        data_dir = str(default_data_dir(env))
    url = top["database_url"] if "database_url" in top else file.get("database_url", "")
    if not isinstance(data_dir, str) or not isinstance(url, str):
        raise Unsure("data_dir or database_url is not a string")
    if not url:
        url = f"sqlite:///{Path(data_dir) / 'guard.db'}"

    extra, allow = _redact(sections["redact"])
    return Resolved(url, extra, allow, _secrets(sections, file.get("intake") or []))


def _read_yaml(path: Path) -> dict[str, Any]:
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
        data = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise Unsure(str(exc)) from None
    if data is None:
        return {}
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise Unsure("the file is not a mapping of names")
    return data


def _environment(env: Mapping[str, str]) -> tuple[dict[str, str], dict[tuple[str, str], str]]:
    """``GUARD_*`` variables as pydantic-settings reads them (names in any case): top-level
    ``data_dir``/``database_url``, and the secrets given one by one (``GUARD_LLM__API_KEY``)."""
    seen: set[str] = set()
    top: dict[str, str] = {}
    nested: dict[tuple[str, str], str] = {}
    for raw, value in env.items():
        name = raw.lower()
        if not name.startswith("guard_"):
            continue
        if name in seen:
            raise Unsure(f"{raw} is set twice in different cases")
        seen.add(name)
        field = name.removeprefix("guard_")
        section, _, key = field.partition("__")
        if section == "intake":
            raise Unsure(f"{raw}: intake sources (and their secrets) from the environment")
        if not key:
            if field in SECTIONS:
                raise Unsure(f"{raw}: a whole section from the environment")
            if field in ("data_dir", "database_url"):
                top[field] = value
        elif section in SECTIONS:
            if section == "redact" or (section == "llm" and key.startswith("fallback")):
                raise Unsure(f"{raw}: redaction settings from the environment")
            if "__" in key:
                raise Unsure(f"{raw}: nested deeper than one section")
            if (section, key) in SECRETS:
                nested[(section, key)] = value
    return top, nested


def _section(file: Mapping[str, Any], name: str) -> dict[str, Any]:
    found = file.get(name, {})
    if not isinstance(found, dict):
        raise Unsure(f"{name} is not a mapping")
    return found


def _secrets(sections: Mapping[str, Mapping[str, Any]], intake: Any = ()) -> tuple[str, ...]:
    """``Settings.secret_values``."""
    values: list[str] = []
    for section, key in SECRETS:
        value = sections[section].get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise Unsure(f"{section}.{key} is not a string")
        if (section, key) == ("audit", "key") and len(value) < 16:
            raise Unsure("audit.key is too short")  # the full path names the problem
        values.append(value)
    if sections["llm"].get("mcp_servers"):
        raise Unsure("llm.mcp_servers name credentials in the environment")
    fallback = sections["llm"].get("fallback", [])
    if not isinstance(fallback, list):
        raise Unsure("llm.fallback is not a list")
    for endpoint in fallback:
        if not isinstance(endpoint, dict):
            raise Unsure("an llm.fallback entry is not a mapping")
        api_key = endpoint.get("api_key")
        if api_key is not None and not isinstance(api_key, str):
            raise Unsure("an llm.fallback api_key is not a string")
        if api_key is not None:
            values.append(api_key)
    if not isinstance(intake, list) or not all(isinstance(s, dict) for s in intake):
        raise Unsure("intake is not a list of mappings")
    for source in intake:
        found = [source.get("token"), source.get("hmac_secret")]
        if not all(v is None or isinstance(v, str) for v in found):
            raise Unsure("an intake token or hmac_secret is not a string")
        values += [v for v in found if v is not None]
    token = sections["skills"].get("git_token")
    if isinstance(token, str):
        values.append(basic_credentials(token))
    return tuple(v for v in values if len(v) >= 4)


def _redact(section: Mapping[str, Any]) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """``redact.extra_patterns`` and ``redact.allow``, checked as ``RedactSettings`` does."""
    if set(section) - {"extra_patterns", "allow"}:
        raise Unsure("unknown redact keys")
    extra: list[tuple[str, str]] = []
    patterns = section.get("extra_patterns", [])
    allow = section.get("allow", [])
    if not isinstance(patterns, list) or not isinstance(allow, list):
        raise Unsure("redact lists are not lists")
    for item in patterns:
        entry = {"pattern": item} if isinstance(item, str) else item
        if not isinstance(entry, dict) or set(entry) - {"pattern", "kind"}:
            raise Unsure("an extra pattern is not a pattern")
        pattern, kind = entry.get("pattern"), entry.get("kind", "custom")
        if not isinstance(pattern, str) or not isinstance(kind, str):
            raise Unsure("an extra pattern is not a string")
        compiled = _compiles(pattern)
        if compiled is None or compiled.match("") or not _KIND.fullmatch(kind):
            raise Unsure("an extra pattern is invalid")
        extra.append((pattern, kind))
    if not all(isinstance(a, str) and _compiles(a) is not None for a in allow):
        raise Unsure("an allow pattern is invalid")
    return tuple(extra), tuple(allow)


def _compiles(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None
