"""Where the settings come from, and the defaults read from the environment (no pydantic here:
the fast path of ``guard incidents list`` shares them, see ``guard.config.fast``).

Tested by ``tests/config/test_config.py``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def config_path(
    explicit: str | Path | None, environ: Mapping[str, str] | None = None
) -> Path | None:
    """The YAML file to read: ``--config``, else ``GUARD_CONFIG``, else ``./guard.yaml`` if any."""
    env = os.environ if environ is None else environ
    if explicit:
        return Path(explicit)
    if value := env.get("GUARD_CONFIG"):
        return Path(value)
    default = Path("guard.yaml")
    return default if default.is_file() else None


def default_data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``data_dir``'s default: Railway's volume when there is one, else ``./data``."""
    env = os.environ if environ is None else environ
    return Path(env.get("RAILWAY_VOLUME_MOUNT_PATH") or "./data")


def default_http_port() -> int:
    """``http_port``'s default: ``$PORT`` (as platforms set it), else 8080."""
    return int(os.environ.get("PORT") or 8080)


def shipped_skills() -> Path | None:
    """The starter skills of a source checkout (``skills/`` beside ``pyproject.toml``), or
    None for an installed package, which ships none."""
    root = Path(__file__).resolve().parents[2]
    found = root / "skills"
    return found if found.is_dir() and (root / "pyproject.toml").is_file() else None


def check_public_url(value: str | None) -> str | None:
    """``public_url`` without its trailing slash; an error naming the field unless http(s)."""
    if value is None or not value.strip():
        return None
    url = value.strip().rstrip("/")
    scheme, _, rest = url.partition("://")
    if scheme.lower() not in ("http", "https") or not rest or any(c in rest for c in " ?#"):
        raise ValueError(
            f"public_url {value!r} is not an http(s) URL without query or fragment: set it to "
            "where people open the console, e.g. https://guard.example.com"
        )
    return url
