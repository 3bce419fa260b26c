"""Per-incident sandbox sessions: ``create_sandbox`` makes one on the configured backend
(``guard.sandbox.kinds``); ``WarmSandboxPool`` (the ``SandboxPool`` port) keeps one warm
sandbox per open incident so its commands reuse one container, closes it on release, and
reaps what a dead Guard left behind.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from guard.config import KubernetesSettings, SandboxSettings
from guard.redact import Redactor
from guard.sandbox.base import Sandbox, SandboxGrants, resolve_secrets
from guard.sandbox.kinds import SandboxBackend, SandboxRequest, resolve_backend


def create_sandbox(
    settings: SandboxSettings,
    *,
    incident_id: str,
    grants: SandboxGrants | None = None,
    environ: Mapping[str, str] | None = None,
    redactor: Redactor | None = None,
    client: Any = None,
    image: str | None = None,
    cluster: KubernetesSettings | None = None,
    backend: SandboxBackend | None = None,
) -> Sandbox:
    """A sandbox for ``incident_id`` on ``backend`` (default: the configured one, ``auto``
    resolved), with granted secrets resolved from ``environ`` (default: Guard's environment)."""
    grants = grants or SandboxGrants()
    request = SandboxRequest(
        incident_id=incident_id,
        grants=grants,
        secrets=resolve_secrets(grants.secrets, environ),
        redactor=redactor,
        client=client,
        image=image,
        cluster=cluster,
    )
    return (backend or resolve_backend(settings, cluster)).create(settings, request)


class WarmSandboxPool:
    """One sandbox per incident id, created on first ``get`` and closed by ``release``."""

    def __init__(
        self,
        settings: SandboxSettings,
        *,
        environ: Mapping[str, str] | None = None,
        redactor: Redactor | None = None,
        client: Any = None,
        cluster: KubernetesSettings | None = None,
    ) -> None:
        self.settings = settings
        self._cluster = cluster or KubernetesSettings()
        self._backend: SandboxBackend | None = None  # ``auto`` resolved once, on first need
        self._environ = environ
        self._redactor = redactor
        self._client = client
        self._sessions: dict[str, Sandbox] = {}
        self._grants: dict[str, SandboxGrants] = {}
        self._lock = asyncio.Lock()

    def __len__(self) -> int:
        return len(self._sessions)

    async def get(self, incident_id: str, grants: SandboxGrants | None = None) -> Sandbox:
        """The incident's sandbox with exactly ``grants``: the warm one if it was made with the
        same grants, else a new one (the old one is closed first, so a step never sees what an
        earlier step's skill was granted, nor lacks what its own skill was)."""
        grants = grants or SandboxGrants()
        stale = None
        async with self._lock:
            found = self._sessions.get(incident_id)
            if found is not None and self._grants.get(incident_id) != grants:
                stale, found = found, None
            if found is None:
                found = create_sandbox(
                    self.settings,
                    incident_id=incident_id,
                    grants=grants,
                    environ=self._environ,
                    redactor=self._redactor,
                    client=self._client,
                    cluster=self._cluster,
                    backend=self._resolved(),
                )
                self._sessions[incident_id] = found
                self._grants[incident_id] = grants
        if stale is not None:
            await stale.close()
        return found

    async def release(self, incident_id: str) -> None:
        """The incident ended: remove its sandbox."""
        async with self._lock:
            found = self._sessions.pop(incident_id, None)
            self._grants.pop(incident_id, None)
        if found is not None:
            await found.close()

    async def close(self) -> None:
        """Remove every sandbox (Guard is shutting down)."""
        async with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
            self._grants.clear()
        await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)

    def _resolved(self) -> SandboxBackend:
        if self._backend is None:
            self._backend = resolve_backend(self.settings, self._cluster)
        return self._backend

    async def reap(self) -> int:
        """Remove the sandboxes (containers, pods, local processes and directories) left by a
        Guard that died."""
        backend = await asyncio.to_thread(self._resolved)
        if backend.reap is None:
            return 0
        return await asyncio.to_thread(backend.reap, self._client, self.settings, self._cluster)
