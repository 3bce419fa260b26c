"""What every sandbox backend offers: the ``Sandbox`` protocol, its ``ExecResult``, and grants.

A sandbox is one incident's place to run diagnostic and repair commands. ``run`` is async (Guard
is asyncio) and never raises for a failing *command*: non-zero exits, timeouts and OOM kills are
facts in the ``ExecResult``. It raises ``SandboxError`` only when the sandbox itself cannot work
(engine down, image missing). Output is captured by ``OutputBuffer``: at most ``limit`` bytes per
stream are kept, the rest is counted and dropped as it arrives, so a command printing gigabytes
costs Guard no memory. Secrets are redacted before anything leaves the sandbox layer.

Playbooks may widen the default (no network, no mounts, no secrets) only through
``SandboxGrants``; nothing else about the sandbox is configurable from a playbook.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from guard.exceptions import SandboxError
from guard.redact import Redactor

DEFAULT_OUTPUT_LIMIT = 64 * 1024
TIMEOUT_EXIT_CODE = 124  # what coreutils `timeout` reports; ``timed_out`` is the real signal
Command = str | Sequence[str]
"""A shell string (run with ``/bin/sh -c``) or an argv list (run as is)."""


def argv(command: Command) -> list[str]:
    """The argv for ``command``: strings go through ``/bin/sh -c``."""
    if isinstance(command, str):
        return ["/bin/sh", "-c", command]
    if not command:
        raise SandboxError("empty command: give a shell string or a non-empty argv list")
    return list(command)


@dataclass(frozen=True, slots=True)
class ExecResult:
    """The outcome of one command. ``stdout``/``stderr`` are capped, redacted text."""

    exit_code: int
    stdout: str
    stderr: str
    duration: float
    timed_out: bool = False
    oom_killed: bool = False
    stdout_truncated: int = 0  # bytes dropped beyond the cap
    stderr_truncated: int = 0

    @property
    def ok(self) -> bool:
        """The command ran to completion and exited 0."""
        return self.exit_code == 0 and not self.timed_out and not self.oom_killed


@runtime_checkable
class Sandbox(Protocol):
    """One incident's isolated place to run commands; reused across its commands."""

    async def run(
        self,
        command: Command,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 (a per-command budget)
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
        stdin: bytes | str | None = None,
    ) -> ExecResult:
        """Run ``command`` and wait for it (at most ``timeout`` seconds; default from settings)."""
        ...

    async def close(self) -> None:
        """Stop and remove everything this sandbox started. Idempotent."""
        ...


_FORBIDDEN_SOURCES = ("/var/run/docker.sock", "/run/docker.sock", "/run/containerd")


class ReadOnlyMount(BaseModel):
    """A host path made visible read-only inside the sandbox."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str = Field(description="absolute path on the Docker host")
    target: str = Field(description="absolute path inside the sandbox")

    @field_validator("source", "target")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError(f"{value!r} must be an absolute path")
        norm = posixpath.normpath(value)
        if norm == "/":
            raise ValueError("mounting / is not allowed")
        return norm

    @field_validator("target")
    @classmethod
    def _free_target(cls, value: str) -> str:
        if value in ("/tmp", "/workspace") or value.split("/")[1] in ("proc", "sys", "dev"):
            raise ValueError(f"{value!r} is reserved inside the sandbox; mount somewhere else")
        return value

    @field_validator("source")
    @classmethod
    def _not_engine_socket(cls, value: str) -> str:
        if value.endswith(".sock") or any(
            value == bad or value.startswith(bad + "/") or bad.startswith(value + "/")
            for bad in _FORBIDDEN_SOURCES
        ):
            raise ValueError(f"{value!r}: container-engine sockets are never mounted")
        return value


class SandboxGrants(BaseModel):
    """What a playbook may add to the locked-down default, and nothing else."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    network: str | None = Field(
        default=None, description="name of a Docker network to join (default: no network)"
    )
    secrets: list[str] = Field(
        default_factory=list,
        description="env var names whose values come from Guard's environment (redacted)",
    )
    mounts: list[ReadOnlyMount] = Field(default_factory=list, description="read-only mounts")

    @field_validator("network")
    @classmethod
    def _named_network(cls, value: str | None) -> str | None:
        if value in (None, "", "none"):
            return None
        assert value is not None
        if value in ("host", "default") or value.startswith("container:"):
            raise ValueError(f"network {value!r} is not allowed: name a Docker network")
        return value

    @field_validator("secrets")
    @classmethod
    def _env_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not name.replace("_", "a").isalnum() or name[0].isdigit():
                raise ValueError(f"secret {name!r} must be an environment variable name")
        return value


def resolve_secrets(
    names: Sequence[str], source: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Look up each granted secret in ``source`` (default: Guard's environment)."""
    source = os.environ if source is None else source
    missing = [n for n in names if not source.get(n)]
    if missing:
        raise SandboxError(
            f"granted secret(s) {', '.join(missing)} not set: export them in Guard's environment"
        )
    return {n: source[n] for n in names}


class OutputBuffer:
    """Keeps the first ``limit`` bytes of a stream, counts the rest, and renders redacted text.

    It keeps ``slack`` extra bytes (the longest secret) so a secret that crosses the cut is
    still recognised and redacted before the text is cut to size.
    """

    def __init__(self, limit: int, slack: int = 0) -> None:
        self.limit = limit
        self._keep = limit + slack
        self._data = bytearray()
        self.total = 0

    def feed(self, chunk: bytes | memoryview) -> None:
        """Account for ``chunk``; only the part that still fits is copied."""
        self.total += len(chunk)
        room = self._keep - len(self._data)
        if room > 0:
            self._data += chunk[:room]

    @property
    def dropped(self) -> int:
        return max(0, self.total - self.limit)

    def text(self, redactor: Redactor | None) -> str:
        data = bytes(self._data)
        if redactor:
            data = redactor.redact_bytes(data)
        if self.dropped:
            data = data[: self.limit]
        text = data.decode("utf-8", errors="replace")
        if self.dropped:
            text += f"\n[... truncated {self.dropped} bytes ...]"
        return text
