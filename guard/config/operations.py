"""The sections of Guard's own work: sandbox, triage, agent, memory, checks, store, HA, report."""

from __future__ import annotations

import os
import re
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from guard.config.validators import Section
from guard.domain.durations import Duration


class SandboxSettings(Section):
    backend: Literal["auto", "docker", "kubernetes", "local"] = "docker"
    namespace: str | None = None  # kubernetes: step pods' (default: the context's, Guard's pod's)
    images: list[str] = Field(default_factory=list, description="more images pods may use")
    image: str = "guard-toolbox:latest"
    memory: str = "256m"
    cpus: float = 1.0
    pids: int = 128
    timeout: Duration = 60.0
    output_limit: int = Field(default=65536, ge=1024, description="bytes kept per stream")
    tmpfs_size: str = Field(default="64m", description="size cap of /tmp and /workspace each")
    user: str = Field(default="65534:65534", description="uid:gid commands run as (never root)")

    @field_validator("user")
    @classmethod
    def _not_root(cls, value: str) -> str:
        """``uid[:gid]``, each a number or a name; numbers are read as numbers (``00`` is 0)."""
        parts = value.split(":")
        if len(parts) > 2 or not all(re.fullmatch(r"[0-9]+|[a-z_][a-z0-9_-]*", p) for p in parts):
            raise ValueError(f"sandbox.user {value!r}: use uid[:gid], e.g. 65534:65534")
        if any(p == "root" or (p.isdigit() and int(p) == 0) for p in parts):
            raise ValueError(
                f"sandbox.user {value!r}: commands must not run as root (uid or gid 0)"
            )
        return value

    @field_validator("user")
    @classmethod
    def _numeric_on_kubernetes(cls, value: str, info: ValidationInfo) -> str:
        """``runAsNonRoot`` is checked on numbers only: a pod cannot run as a user name."""
        if info.data.get("backend") == "kubernetes" and not value.replace(":", "").isdigit():
            raise ValueError(
                f"sandbox.user {value!r}: the kubernetes backend needs numbers (uid:gid), "
                "e.g. 65534:65534"
            )
        return value

    @field_validator("memory", mode="before")
    @classmethod
    def _memory_size(cls, value: object) -> object:
        """What docker-py's ``parse_bytes`` takes (bytes, or b/k/m/g), at least the engine's 6m."""

        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)  # plain bytes
        if not isinstance(value, str):
            return value  # pydantic reports the type
        found = re.fullmatch(r"(\d+(?:\.\d+)?)([bkmg])?b?", value.strip(), re.IGNORECASE)
        if found is None:
            raise ValueError(
                f"sandbox.memory {value!r}: not a Docker memory size; a number of bytes or one "
                "with a unit b, k, m or g, e.g. '256m' or '1g'"
            )
        size = float(found[1]) * 1024 ** "bkmg".index((found[2] or "b").lower())
        if size < 6 * 1024 * 1024:
            raise ValueError(f"sandbox.memory {value!r}: below Docker's minimum of 6m; e.g. '256m'")
        return value.strip()

    @field_validator("cpus")
    @classmethod
    def _cpus(cls, value: float) -> float:
        most = (os.cpu_count() or 1) * 4
        if not 0.01 <= value <= most:
            raise ValueError(
                f"sandbox.cpus {value}: must be from 0.01 to {most} (4 x this machine's "
                f"{os.cpu_count() or 1} CPUs; the engine itself refuses more than its host has), "
                "e.g. 1.0"
            )
        return value

    @field_validator("pids")
    @classmethod
    def _pids(cls, value: int) -> int:
        if value < 8:
            raise ValueError(
                f"sandbox.pids {value}: at least 8 (docker-init, the idle process, the shell and "
                "the command's own children all count); e.g. 128"
            )
        return value


class TriageSettings(Section):
    auto_resolve: bool = True
    flap_window: Duration = 600.0
    flap_threshold: int = Field(default=3, ge=1)
    max_new_incidents: int = Field(
        default=20,
        ge=1,
        description="new incidents one monitor may open per storm_window; "
        "beyond that its signals fold into one storm incident",
    )
    storm_window: Duration = Field(
        default=300.0,
        description="the storm breaker's window; a storm resolves after one window without signals",
    )
    correlate_window: Duration = Field(
        default=120.0,
        description="a new incident on a service (or on one that depends on it) joins an open "
        "one still firing (its own signals seen within this long) as a related signal "
        "(playbooks' service: and services.NAME.depends_on; 0: never)",
    )
    cause_lead: Duration = Field(
        default=30.0,
        ge=0,
        description="a container's exit, OOM kill or restart joins an incident of another kind "
        "only if that incident began at most this long before it (its symptoms); an older one "
        "is another fault, and the death opens its own incident",
    )
    symptom_wait: Duration = Field(
        default=5.0,
        ge=0,
        description="a symptom of a service that depends on another watched one (nginx's "
        "upstream error) waits this long before it opens an incident, so its cause's signal "
        "(the app's restart) opens first and the symptom joins it (0: never wait)",
    )


class MemorySettings(Section):
    isolate: bool = Field(
        default=True,
        description="keep LanceDB (~150 MB) in a helper process "
        "that runs only while recalls happen",
    )
    idle_timeout: Duration = Field(
        default=600.0, description="the helper process leaves after this long without a recall"
    )


class AgentSettings(Section):
    enabled: bool = True
    max_concurrent_incidents: int = Field(default=4, ge=1)
    max_concurrent_remediations: int = Field(default=2, ge=1)
    breaker_failures: int = Field(
        default=2, ge=1, description="failed runs in a row that disable a skill for a target"
    )
    approval_ttl: Duration = 1800.0
    verify_timeout: Duration = 60.0
    fix_timeout: Duration = 120.0
    poll_interval: Duration = 1.0
    settle: Duration = Field(
        default=10.0,
        ge=0,
        description="how long a fault must stay gone: a target that can flap (a restart "
        "policy's container, a reopened incident) must keep passing this long before "
        "verification counts it cured; a human's fix is checked again this long after it "
        "passed before it is learned; and a remedy's hold (the signals its action explains: "
        "a restart's exit, health and HTTP failures) lasts this long past verification",
    )


class SchedulerSettings(Section):
    max_concurrent_checks: int = Field(
        default=64,
        ge=1,
        description="monitor checks running at once; a check due while all "
        "run waits, and guard_check_lag_seconds shows how long",
    )


class StoreSettings(Section):
    retention: Duration = Field(
        default=90 * 86400.0,
        description="resolved incidents (with their timelines, signals "
        "and conversation) older than this are pruned daily; 0: keep everything",
    )


class HASettings(Section):
    """Replicas on one Postgres ``database_url`` elect a leader (see ``guard.cluster``), by a
    lease row in that database or, with ``backend: kubernetes``, by a Kubernetes Lease."""

    enabled: bool = Field(
        default=True,
        description="elect a leader when the database is "
        "Postgres (SQLite: the one process is always the leader)",
    )
    lease_ttl: Duration = Field(
        default=15.0,
        gt=1.0,
        description="how long a leader's lease "
        "lasts unrenewed; a standby takes over after it runs out",
    )
    replica_id: str = Field(default="", description="this replica's name (default: HOSTNAME:pid)")
    backend: Literal["database", "kubernetes"] = Field(
        default="database",
        description="where the election happens: a row in the shared database, or a "
        "coordination.k8s.io Lease (the fencing token is still enforced in the database)",
    )
    lease_name: str = Field(
        default="guard-leader",
        max_length=253,
        pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
        description="the Lease object's name, a DNS subdomain (backend: kubernetes)",
    )
    namespace: str = Field(
        default="",
        max_length=63,
        pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$",
        description="the Lease's namespace (backend: kubernetes; default: the pod's own, "
        "from its service account)",
    )


class ReportSettings(Section):
    cron: str = Field(default="0 9 * * *", description="when the daily report is sent (crontab)")
    timezone: str = "UTC"

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        if len(value.split()) != 5:
            raise ValueError(f"report.cron {value!r}: five crontab fields, e.g. '0 9 * * *'")
        return value

    @field_validator("timezone")
    @classmethod
    def _tz(cls, value: str) -> str:
        from zoneinfo import ZoneInfo

        try:
            ZoneInfo(value)
        except Exception:
            raise ValueError(f"report.timezone {value!r}: not a known time zone") from None
        return value
