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

import asyncio
import contextlib
import os
import posixpath
import stat
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from guard.domain.exceptions import SandboxError
from guard.redact import Redactor

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


async def in_worker(work: Callable[[threading.Event], ExecResult]) -> ExecResult:
    """Blocking ``work`` in a thread. Cancelled, it sets ``work``'s abort event and waits for it
    to return, so whatever the command started (a container, a pod) is gone when this ends."""
    abort = threading.Event()
    worker = asyncio.ensure_future(asyncio.to_thread(work, abort))
    try:
        return await asyncio.shield(worker)
    except asyncio.CancelledError:
        abort.set()  # the worker removes what it made on its next wake-up, then returns
        with contextlib.suppress(Exception):
            await worker
        raise


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


# Host paths a sandbox never sees, not even read-only, with why and what to grant instead.
# Engine sockets are doors, not files: a read-only mount does not stop a process talking through
# one, and talking to the engine is root on the host. /proc/1/root is the host's whole filesystem.
_NO_SOCKETS = "sockets are never mounted; reach a service through a granted network instead"
_NARROWER = "grant only the directory or file the commands need (e.g. /srv/app/logs)"
_FORBIDDEN_SOURCES: dict[str, tuple[str, str]] = {
    "/proc": ("the kernel's view of every process (/proc/1/root is the host's root)", _NARROWER),
    "/sys": ("the kernel's and the devices' settings", _NARROWER),
    "/dev": ("the host's devices", _NARROWER),
    "/var/lib/docker": (
        "Docker's own state (every container's files, volumes and secrets)",
        "grant the host directory your app bind-mounts instead (e.g. /srv/app/logs)",
    ),
    "/var/lib/containerd": ("containerd's state (every container's files)", _NARROWER),
    "/run/docker.sock": ("the Docker engine's socket (root on the host)", _NO_SOCKETS),
    "/var/run/docker.sock": ("the Docker engine's socket (root on the host)", _NO_SOCKETS),
    "/run/docker": ("the Docker engine's runtime sockets", _NO_SOCKETS),
    "/var/run/docker": ("the Docker engine's runtime sockets", _NO_SOCKETS),
    "/run/containerd": ("containerd's sockets (root on the host)", _NO_SOCKETS),
    "/var/run/containerd": ("containerd's sockets (root on the host)", _NO_SOCKETS),
    "/var/lib/kubelet": (
        "the kubelet's state (every pod's volumes, secrets and tokens)",
        _NARROWER,
    ),
    "/var/lib/containers": ("podman's and cri-o's state (every container's files)", _NARROWER),
    "/var/lib/cri-o": ("cri-o's state (every container's files)", _NARROWER),
    "/var/lib/rancher": ("k3s's state (its containerd, its cluster's secrets)", _NARROWER),
    "/var/lib/podman": ("podman's state (every container's files)", _NARROWER),
    "/etc/kubernetes": ("the cluster's credentials and certificates", _NARROWER),
    "/run/secrets/kubernetes.io": ("the pod's service-account token", _NARROWER),
    "/var/run/secrets/kubernetes.io": ("the pod's service-account token", _NARROWER),
    "/run/containers": ("podman's runtime state and sockets", _NO_SOCKETS),
    "/var/run/containers": ("podman's runtime state and sockets", _NO_SOCKETS),
    "/run/crio": ("cri-o's sockets (root on the host)", _NO_SOCKETS),
    "/var/run/crio": ("cri-o's sockets (root on the host)", _NO_SOCKETS),
    "/run/podman": ("podman's socket (root on the host)", _NO_SOCKETS),
    "/var/run/podman": ("podman's socket (root on the host)", _NO_SOCKETS),
    "/run/k3s": ("k3s's containerd sockets (root on the host)", _NO_SOCKETS),
}


GUARD_ENV_PREFIX = "GUARD_"  # Guard's own settings and secrets (``GUARD_RAILWAY__TOKEN``)


def _guard_setting(name: str) -> bool:
    """Whether environment variable ``name`` is one Guard reads as its own setting
    (``GUARD_<FIELD>`` or ``GUARD_<FIELD>__...``, any case, as pydantic-settings reads them)."""
    from guard.config import Settings  # config imports this module

    upper = name.upper()
    if not upper.startswith(GUARD_ENV_PREFIX):
        return False
    field = upper[len(GUARD_ENV_PREFIX) :].split("__", 1)[0].lower()
    return field in Settings.model_fields or field == "config"


def _forbidden_sources() -> dict[str, tuple[str, str]]:
    """The fixed list plus the socket ``DOCKER_HOST`` names, if it is a unix one."""
    found = dict(_FORBIDDEN_SOURCES)
    host = os.environ.get("DOCKER_HOST", "")
    if host.startswith("unix://") and len(host) > len("unix://"):
        sock = posixpath.normpath("/" + host[len("unix://") :].lstrip("/"))
        paths = [sock]
        with contextlib.suppress(OSError):
            paths.append(os.path.realpath(sock))
        for path in paths:
            found.setdefault(path, ("the engine socket DOCKER_HOST names", _NO_SOCKETS))
    return found


def _source_problem(path: str, *, real: bool) -> tuple[str, str] | None:
    """Why host path ``path`` (absolute, normalised) may not be mounted, and the fix; or None.

    Only a ``real`` path (no symlinks left) is also looked at on disk, for a socket.
    """
    if path == "/":
        return "is the host's whole filesystem", _NARROWER
    for bad, (why, fix) in _forbidden_sources().items():
        if path == bad:
            return f"is {why}", fix
        if path.startswith(bad + "/"):
            return f"is inside {bad}, {why}", fix
        if bad.startswith(path + "/"):
            return f"contains {bad}, {why}", _NARROWER
    if "serviceaccount" in path.split("/"):
        return "holds a Kubernetes service-account token", _NARROWER
    if path.endswith(".sock"):
        return "is named like a container-engine socket (*.sock)", _NO_SOCKETS
    if real:
        with contextlib.suppress(OSError):
            if stat.S_ISSOCK(os.stat(path).st_mode):
                return "is a Unix socket", _NO_SOCKETS
    return None


def check_mount_source(source: str, target: str) -> str:
    """The real path to bind-mount for ``source``, checked as written *and* as resolved.

    Raises ``ValueError`` naming the grant, why it is refused and what to grant instead. The
    text catches paths whose resolution hides them (``/proc/1/root/etc`` resolves to ``/etc``);
    the real path catches symlinks to forbidden places. Paths resolve as Guard sees the
    filesystem: the same as the Docker host's unless Guard runs in a container.
    """
    refused = f"read-only mount {source} -> {target} refused"
    if found := _source_problem(source, real=False):
        raise ValueError(f"{refused}: it {found[0]}; {found[1]}")
    try:
        real = os.path.realpath(source)
    except OSError as exc:  # e.g. a symlink in a directory Guard may not read
        raise ValueError(
            f"{refused}: cannot resolve it ({exc.strerror}), so cannot check where it leads; "
            "grant a path Guard can read"
        ) from None
    if found := _source_problem(real, real=True):
        subject = "it" if real == source else f"it resolves to {real}, which"
        raise ValueError(f"{refused}: {subject} {found[0]}; {found[1]}")
    return real


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
        return posixpath.normpath("/" + value.lstrip("/"))  # normpath keeps a leading "//"

    @field_validator("target")
    @classmethod
    def _free_target(cls, value: str) -> str:
        if value in ("/", "/tmp", "/workspace") or value.split("/")[1] in ("proc", "sys", "dev"):
            raise ValueError(f"{value!r} is reserved inside the sandbox; mount somewhere else")
        return value

    @model_validator(mode="after")
    def _safe_source(self) -> ReadOnlyMount:
        check_mount_source(self.source, self.target)
        return self

    def host_source(self) -> str:
        """The source's real path, re-checked now (a symlink may have changed since loading).

        Raises ``SandboxError`` if it now points somewhere forbidden.
        """
        try:
            return check_mount_source(self.source, self.target)
        except ValueError as exc:
            raise SandboxError(str(exc)) from None


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
            if _guard_setting(name):
                raise ValueError(
                    f"secret {name!r} is Guard's own configuration (its bot token, "
                    "API keys): grant the service's own variable instead"
                )
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
        raw = bytes(self._data)
        data = redactor.redact_bytes(raw) if redactor else raw
        if self.dropped:  # where redaction shrank the text, cut earlier: the bytes past the
            # limit (the slack) may hold the start of a secret too cut off to be recognised
            data = data[: self.limit - max(0, len(raw) - len(data))]
        text = data.decode("utf-8", errors="replace")
        if self.dropped:
            text += f"\n[... truncated {self.dropped} bytes ...]"
        return text


@runtime_checkable
class SandboxPool(Protocol):
    """Incidents' sandboxes: one warm sandbox per open incident, whatever the backend."""

    async def get(self, incident_id: str, grants: SandboxGrants | None = None) -> Sandbox:
        """The incident's sandbox with exactly ``grants`` (made on first use)."""
        ...

    async def release(self, incident_id: str) -> None:
        """The incident ended: remove its sandbox. Idempotent."""
        ...

    async def close(self) -> None:
        """Remove every sandbox (Guard is shutting down)."""
        ...

    async def reap(self) -> int:
        """Remove the sandboxes an earlier, dead Guard left behind; how many were removed."""
        ...
