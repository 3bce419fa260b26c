"""Sandbox backends: one entry per backend says how to make its sandbox and clean up after it.

A ``SandboxBackend`` is its name (``sandbox.backend``), how to create an incident's sandbox
(the implementation is imported only then: the Docker SDK loads only for ``docker``), and, for
a backend whose sandboxes outlive a dead Guard (containers), how to open its engine and reap
what a dead Guard left. ``create_sandbox``, the pool's reaper and ``guard sandbox run`` read
this table; nothing else branches on the backend's name. ``sandbox.backend``'s allowed values
are this table's keys (``tests/contracts/test_plugin_tables.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from guard.config import SandboxSettings
from guard.redact import Redactor
from guard.sandbox.base import Sandbox, SandboxGrants


@dataclass(frozen=True)
class SandboxRequest:
    """What one sandbox is made for: its incident, grants and resolved secrets."""

    incident_id: str
    grants: SandboxGrants
    secrets: Mapping[str, str]
    redactor: Redactor | None = None
    client: Any = None  # the backend's engine, when the caller holds one
    image: str | None = None  # another image than ``sandbox.image``


@dataclass(frozen=True)
class SandboxBackend:
    """One backend: how to create its sandbox, and (if any) its engine and its reaper."""

    name: str
    create: Callable[[SandboxSettings, SandboxRequest], Sandbox]
    connect: Callable[[], Any] | None = None  # the engine a caller may share between sandboxes
    reap: Callable[[Any], int] | None = None  # what a dead Guard left: how many removed


def _every(request: SandboxRequest) -> dict[str, Any]:
    """The arguments every backend's sandbox takes."""
    return {
        "incident_id": request.incident_id,
        "grants": request.grants,
        "secrets": dict(request.secrets),
        "redactor": request.redactor,
    }


def _docker(settings: SandboxSettings, request: SandboxRequest) -> Sandbox:
    from guard.sandbox.docker import DockerSandbox

    return DockerSandbox(settings, client=request.client, image=request.image, **_every(request))


def _docker_connect() -> Any:
    from guard.sandbox.docker import connect

    return connect()


def _docker_reap(client: Any) -> int:
    """Remove the sandbox containers of Guards that died (``client``: None opens one)."""
    from guard.sandbox.docker import connect, reap_orphans

    engine = connect() if client is None else client
    try:
        return reap_orphans(engine, only_dead_owners=True)
    finally:
        if client is None:
            engine.close()


def _local(settings: SandboxSettings, request: SandboxRequest) -> Sandbox:
    from guard.sandbox.local import LocalSandbox

    return LocalSandbox(settings, **_every(request))


SANDBOX_BACKENDS: dict[str, SandboxBackend] = {
    b.name: b
    for b in (
        SandboxBackend("docker", _docker, connect=_docker_connect, reap=_docker_reap),
        # child processes of Guard: they die with it, nothing to reap
        SandboxBackend("local", _local),
    )
}


def sandbox_backend(name: str) -> SandboxBackend:
    """The backend called ``name`` (``sandbox.backend``)."""
    try:
        return SANDBOX_BACKENDS[name]
    except KeyError:
        known = ", ".join(sorted(SANDBOX_BACKENDS))
        raise ValueError(f"sandbox.backend {name!r}: unknown (known: {known})") from None
