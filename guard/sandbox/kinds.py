"""Sandbox backends: one entry per backend says how to make its sandbox and clean up after it.

A ``SandboxBackend`` is its name (``sandbox.backend``), how to create an incident's sandbox
(the implementation is imported only then: the Docker SDK loads only for ``docker``), whether it
isolates, how to tell it works here (for ``auto``) and, for a backend whose sandboxes outlive a
dead Guard (containers, pods), how to open its engine and reap what a dead Guard left.
``create_sandbox``, the pool's reaper and ``guard sandbox run`` read this table; nothing else
branches on the backend's name. ``sandbox.backend``'s allowed values are this table's keys and
``auto`` (``tests/contracts/test_plugin_tables.py``): the first isolating entry that works here,
in table order; never ``local``, which isolates nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from guard.config import KubernetesSettings, SandboxSettings
from guard.domain.exceptions import SandboxError
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
    cluster: KubernetesSettings | None = None  # the ``kubernetes:`` section (cluster access)


@dataclass(frozen=True)
class SandboxBackend:
    """One backend: how to create its sandbox, whether it isolates, how to tell it works here,
    and (if any) its engine and its reaper."""

    name: str
    create: Callable[[SandboxSettings, SandboxRequest], Sandbox]
    isolates: bool = True  # no network, host files or privileges unless granted
    # why it cannot work here (None: it can); only isolating entries with one are ``auto``'s
    probe: Callable[[SandboxSettings, KubernetesSettings], str | None] | None = None
    # the engine a caller may share between sandboxes
    connect: Callable[[KubernetesSettings], Any] | None = None
    # what a dead Guard left (the engine, None: open one): how many removed
    reap: Callable[[Any, SandboxSettings, KubernetesSettings], int] | None = None


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


def _docker_connect(_cluster: KubernetesSettings) -> Any:
    from guard.sandbox.docker import connect

    return connect()


def _docker_probe(_settings: SandboxSettings, _cluster: KubernetesSettings) -> str | None:
    from guard.sandbox.docker import connect

    try:
        connect(timeout=5).close()
    except SandboxError:
        return "no Docker engine"
    return None


def _docker_reap(client: Any, _settings: SandboxSettings, _cluster: KubernetesSettings) -> int:
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


def _kube(settings: SandboxSettings, request: SandboxRequest) -> Sandbox:
    from guard.sandbox.kubernetes import KubeSandbox

    return KubeSandbox(
        settings,
        client=request.client,
        cluster=request.cluster,
        image=request.image,
        **_every(request),
    )


def _kube_connect(cluster: KubernetesSettings) -> Any:
    from guard.sandbox.kubernetes import connect

    return connect(cluster)


def _kube_probe(settings: SandboxSettings, cluster: KubernetesSettings) -> str | None:
    from guard.sandbox.kubernetes import probe

    return probe(settings, cluster)


def _kube_reap(client: Any, settings: SandboxSettings, cluster: KubernetesSettings) -> int:
    """Delete the step pods and secrets of Guards that are gone (``client``: None opens one)."""
    from guard.sandbox.kubernetes import connect, reap_orphans, sandbox_namespace

    kube = connect(cluster) if client is None else client
    try:
        return reap_orphans(kube, sandbox_namespace(settings, cluster))
    finally:
        if client is None:
            kube.close()


def _local_reap(_client: Any, _settings: SandboxSettings, _cluster: KubernetesSettings) -> int:
    """Kill the commands and remove the directories of local sandboxes of dead Guards."""
    from guard.sandbox.local import reap_orphans

    return reap_orphans()


SANDBOX_BACKENDS: dict[str, SandboxBackend] = {
    b.name: b
    for b in (
        SandboxBackend(
            "docker", _docker, probe=_docker_probe, connect=_docker_connect, reap=_docker_reap
        ),
        SandboxBackend(
            "kubernetes", _kube, probe=_kube_probe, connect=_kube_connect, reap=_kube_reap
        ),
        # plain processes on Guard's host: isolates nothing
        SandboxBackend("local", _local, isolates=False, reap=_local_reap),
    )
}
AUTO = "auto"


def sandbox_backend(name: str) -> SandboxBackend:
    """The backend called ``name`` (``sandbox.backend``)."""
    try:
        return SANDBOX_BACKENDS[name]
    except KeyError:
        known = ", ".join(sorted(SANDBOX_BACKENDS))
        raise ValueError(f"sandbox.backend {name!r}: unknown (known: {known})") from None


def resolve_backend(
    settings: SandboxSettings, cluster: KubernetesSettings | None = None
) -> SandboxBackend:
    """The entry ``sandbox.backend`` names; for ``auto``, the first isolating entry that works
    here. ``SandboxError`` when none does: ``auto`` never falls back to ``local``."""
    if settings.backend != AUTO:
        return sandbox_backend(settings.backend)
    cluster = cluster or KubernetesSettings()
    reasons = []
    for entry in SANDBOX_BACKENDS.values():
        if entry.isolates and entry.probe is not None:
            why = entry.probe(settings, cluster)
            if why is None:
                return entry
            reasons.append(why)
    raise SandboxError(
        f"sandbox: none ({', '.join(reasons)}): shell steps cannot run here (sandbox.backend "
        "auto never picks local, which isolates nothing); start a Docker engine, give Guard a "
        "cluster in the kubernetes: section, or point DOCKER_HOST at an engine you trust"
    )
