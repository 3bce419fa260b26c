"""The ``probes:`` section: what Guard's typed probes (``probe.http``, ``probe.postgres``...)
may reach, with which secrets, and their bounds.

A probe runs in Guard's own process, with Guard's network: so it reaches nothing unless this
section names the host (and, if given, the ports). Loopback and other local addresses are
reached only when named here too. A connection secret is an environment variable name listed
under ``secrets``; its value never leaves the probe unredacted.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field, field_validator

from guard.config.validators import Section
from guard.domain.durations import Duration

_HOST = re.compile(r"[A-Za-z0-9_.:\[\]-]+")
_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ProbeTarget(Section):
    """One host a probe may reach, and on which ports (none listed: any port)."""

    host: str = Field(description="a host name or IP address, exactly as probes name it")
    ports: list[int] = Field(default_factory=list, description="the ports; empty: any")

    @field_validator("host")
    @classmethod
    def _host(cls, value: str) -> str:
        value = value.strip().lower().strip("[]")
        if not value or not _HOST.fullmatch(value):
            raise ValueError(f"probes.allow host {value!r}: a host name or IP, e.g. db.internal")
        return value

    @field_validator("ports")
    @classmethod
    def _ports(cls, value: list[int]) -> list[int]:
        for port in value:
            if not 1 <= port <= 65535:
                raise ValueError(f"probes.allow port {port}: must be from 1 to 65535")
        return value


class ProbesSettings(Section):
    allow: list[ProbeTarget] = Field(
        default_factory=list,
        description="the hosts (and ports) probes may reach; nothing else, loopback included",
    )
    secrets: list[str] = Field(
        default_factory=list,
        description="environment variable names a probe may use as its connection secret "
        "(probe.postgres secret=NAME: a postgresql:// URL; probe.redis: a redis:// URL)",
    )
    ca_file: Path | None = Field(
        default=None,
        description="a PEM bundle of your own CAs that probe.tls (and probe.http's https) "
        "trust besides the public ones (an internal CA)",
    )
    timeout: Duration = Field(default=10.0, gt=0, description="at most this long per probe")
    output_limit: int = Field(
        default=8192, ge=256, le=65536, description="characters of a probe's result kept"
    )

    @field_validator("secrets")
    @classmethod
    def _env_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not _ENV.fullmatch(name):
                raise ValueError(
                    f"probes.secrets {name!r}: an environment variable name, e.g. ORDERS_DB_URL"
                )
            if name.upper().startswith("GUARD_"):
                raise ValueError(
                    f"probes.secrets {name!r} is Guard's own configuration: grant the "
                    "service's own variable instead"
                )
        return value
