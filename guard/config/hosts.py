"""The ``hosts:`` section: machines Guard acts on over SSH (docs/HOSTS.md).

A host names what Guard may touch (``units``, ``paths``, ``commands``); ``guard host setup``
turns that into the allowlist the host itself enforces, so these lists are a request, and the
host's allowlist file is the limit. The host key is pinned: Guard never trusts on first use
(``guard host add NAME --scan`` prints the key for a person to paste here).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pydantic import Field, field_validator

from guard.config.validators import Section
from guard.domain.durations import Duration

_UNIT = re.compile(r"^[A-Za-z0-9@_.:\\-]+\.(service|socket|timer|target|path|mount)$")
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
_KEY = re.compile(r"^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/=]+$")


def secret_env(name: str) -> str:
    """The environment variable holding the secret ``name`` (``GUARD_SECRET_<NAME>``)."""
    return f"GUARD_SECRET_{name.upper().replace('-', '_')}"


class HostSettings(Section):
    """One host: how to reach it, which key proves it, what Guard asks to act on."""

    address: str = Field(description="the host's address (name or IP)")
    port: int = Field(default=22, ge=1, le=65535)
    user: str = Field(default="guard", description="the user guard-exec runs as")
    host_key: str = Field(
        default="",
        description="the host's public key, pinned ('ssh-ed25519 AAAA...'); a different key "
        "is refused. `guard host add NAME --scan` prints it for review",
    )
    key: str = Field(
        description="the name of the secret holding Guard's private key: the environment "
        "variable GUARD_SECRET_<NAME> or the file <data_dir>/secrets/<name>"
    )
    units: list[str] = Field(default_factory=list, description="systemd units Guard may act on")
    paths: list[str] = Field(default_factory=list, description="log file globs it may truncate")
    commands: dict[str, str] = Field(
        default_factory=dict, description="named commands for host.run NAME (argv, shell words)"
    )
    jump: str | None = Field(default=None, description="another host's name to reach it through")
    from_address: str = Field(
        default="",
        description='the address Guard connects from, for authorized_keys\' from="..." '
        "(`guard host setup` prints it; empty: a placeholder to fill in)",
    )
    connect_timeout: Duration = Field(default=10.0, gt=0)
    command_timeout: Duration = Field(default=60.0, gt=0)
    output_cap: int = Field(default=65536, ge=1024, description="bytes kept of a command's output")

    @field_validator("units")
    @classmethod
    def _units(cls, value: list[str]) -> list[str]:
        for unit in value:
            if not _UNIT.match(unit):
                raise ValueError(f"unit {unit!r} is not a full systemd unit name (nginx.service)")
        return value

    @field_validator("paths")
    @classmethod
    def _paths(cls, value: list[str]) -> list[str]:
        for glob in value:
            if not glob.startswith("/") or ".." in glob.split("/") or " " in glob:
                raise ValueError(f"path {glob!r} must be an absolute glob without '..' or spaces")
        return value

    @field_validator("commands")
    @classmethod
    def _commands(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not _NAME.match(name):
                raise ValueError(f"command name {name!r}: letters, digits, _ and - only")
        return value

    @field_validator("host_key")
    @classmethod
    def _host_key(cls, value: str) -> str:
        value = " ".join(value.split()[:2])
        if value and not _KEY.match(value):
            raise ValueError(
                "host_key must be '<type> <base64>' as `guard host add NAME --scan` prints it"
            )
        return value


def check_hosts(hosts: dict[str, HostSettings]) -> dict[str, HostSettings]:
    """Host names are words, and a ``jump`` names another configured host."""
    for name, host in hosts.items():
        if not _NAME.match(name):
            raise ValueError(f"host name {name!r}: letters, digits, _ and - only")
        if host.jump is not None and (host.jump not in hosts or host.jump == name):
            raise ValueError(f"hosts.{name}.jump: {host.jump!r} is not another configured host")
    return hosts


def key_values(hosts: dict[str, HostSettings], data_dir: Path) -> list[str]:
    """The hosts' private keys that are set (the variable, else the file), for redaction:
    masked whole and line by line, as a key may be logged one line at a time."""
    found: list[str] = []
    for host in hosts.values():
        text = os.environ.get(secret_env(host.key))
        path = data_dir / "secrets" / host.key
        if text is None and path.is_file():
            text = path.read_text()
        if text:
            found.append(text.strip())
            found += [line for line in text.splitlines() if len(line) >= 16 and "-----" not in line]
    return found
