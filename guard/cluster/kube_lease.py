"""The leader election on a Kubernetes ``coordination.k8s.io`` Lease, fenced in the database.

The Lease says who leads (``holderIdentity``, ``leaseDurationSeconds``, ``acquireTime``,
``renewTime``, ``leaseTransitions``). Every write is a PUT carrying the ``resourceVersion`` it
read (the first one a POST), so when replicas race the API server takes one write and answers
the others 409 Conflict (or AlreadyExists): they lost. A replica judges a Lease run out the way
client-go does: its ``resourceVersion`` has not changed for ``leaseDurationSeconds`` on this
replica's monotonic clock since it first saw that version, so the hosts' wall clocks need not
agree. A released Lease (empty ``holderIdentity``) is free at once. A term that lapsed is never
renewed, even by its own holder: it takes a new one.

A Lease cannot be checked inside a database transaction, so the fencing stays in the database:
``leaseTransitions`` is the term's token. A new leader writes it one above both the Lease's and
the database fence row's (``cluster_lease``), then raises the row's token to it by an UPDATE
that only goes upward (``SqlLease.raise_to``); only then does it lead. Every claim checks the
row in its own transaction (``SqlLease.fence``), so a deposed leader's claims fail from the
moment its successor raised the token, however late it wakes. Each renewal of the Lease renews
the row's expiry too, so a term that lapsed with nobody taking over cannot act either.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlmodel import Session

from guard.cluster.lease import EPOCH, SqlLease, Term
from guard.config import Settings
from guard.domain.exceptions import KubernetesError
from guard.k8s.client import KubeClient, pod_namespace
from guard.store.db import Database

API_VERSION = "coordination.k8s.io/v1"


def micro_time() -> str:
    """Now as a Kubernetes ``MicroTime`` (RFC 3339 with exactly six fractional digits; the
    client re-serialises it with ``isoformat``, which drops a zero fraction)."""
    now = datetime.now(UTC)
    return (now if now.microsecond else now.replace(microsecond=1)).isoformat()


class KubeLease:
    """The Lease ``namespace/name`` elects; ``row`` (the database fence row) fences."""

    def __init__(
        self,
        kube: KubeClient | Settings,
        namespace: str,
        name: str,
        row: SqlLease,
    ) -> None:
        self._kube = kube  # Settings: the client is built on first use (in the lease's thread)
        self.namespace = namespace
        self.name = name
        self.row = row
        self.duration = max(1, math.ceil(row.ttl))
        self._seen: tuple[str, float] = ("", 0.0)  # resourceVersion, monotonic when first seen

    @property
    def kube(self) -> KubeClient:
        if not isinstance(self._kube, KubeClient):
            self._kube = KubeClient(self._kube.kubernetes)
        return self._kube

    def get(self) -> dict[str, Any] | None:
        """The Lease as the API server has it (None: it does not exist yet)."""
        obj = _unless(404, lambda: self.kube.read_lease(self.namespace, self.name))
        if obj is not None:
            self._observe(obj)
        return obj

    def _observe(self, obj: dict[str, Any]) -> None:
        version = str(obj["metadata"].get("resourceVersion", ""))
        if version != self._seen[0]:
            self._seen = (version, time.monotonic())

    def _expired(self, spec: dict[str, Any]) -> bool:
        if not spec.get("holderIdentity"):
            return True
        duration = int(spec.get("leaseDurationSeconds") or self.duration)
        return time.monotonic() >= self._seen[1] + duration

    def read(self) -> Term | None:
        """The Lease's holder and token (even if it ran out), or None if nobody holds it."""
        obj = self.get()
        spec = (obj or {}).get("spec") or {}
        if not spec.get("holderIdentity"):
            return None
        renewed = spec.get("renewTime")
        until = EPOCH
        if renewed:
            lasts = timedelta(seconds=int(spec.get("leaseDurationSeconds") or self.duration))
            until = datetime.fromisoformat(renewed).astimezone(UTC) + lasts
        return Term(spec["holderIdentity"], int(spec.get("leaseTransitions") or 0), until)

    def acquire(self, holder: str, token: int | None = None) -> Term | None:
        """Renew ``holder``'s term ``token`` if it has not lapsed, else take the Lease if it is
        free or has run out. None: another replica holds it, or won the race for it."""
        obj = self.get()
        if obj is None:
            return self._take(None, holder)
        spec = obj.get("spec") or {}
        if not self._expired(spec):
            mine = spec.get("holderIdentity") == holder and token is not None
            if mine and int(spec.get("leaseTransitions") or 0) == token:
                return self._renew(obj, holder, token)
            return None
        return self._take(obj, holder)

    def _write(self, obj: dict[str, Any] | None, spec: dict[str, Any]) -> bool:
        """Create or update the Lease (conditionally on what was read); False: 409, lost."""
        if obj is None:
            body = {
                "apiVersion": API_VERSION,
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": spec,
            }
            written = _unless(409, lambda: self.kube.create_lease(self.namespace, body))
        else:
            body = {**obj, "spec": {**(obj.get("spec") or {}), **spec}}
            written = _unless(409, lambda: self.kube.replace_lease(self.namespace, self.name, body))
        if written is None:
            return False
        self._observe(written)
        return True

    def _renew(self, obj: dict[str, Any], holder: str, token: int) -> Term | None:
        spec = {"renewTime": micro_time(), "leaseDurationSeconds": self.duration}
        if not self._write(obj, spec):
            return None
        return self.row.renew(holder, token)

    def _take(self, obj: dict[str, Any] | None, holder: str) -> Term | None:
        transitions = int(((obj or {}).get("spec") or {}).get("leaseTransitions") or 0)
        token = max(transitions, self.row.top()) + 1
        now = micro_time()
        spec = {
            "holderIdentity": holder,
            "leaseDurationSeconds": self.duration,
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": token,
        }
        if not self._write(obj, spec):
            return None
        return self.row.raise_to(holder, token)

    def release(self, holder: str, token: int) -> bool:
        """Hand the Lease over now (a clean shutdown): an empty holder is free at once."""
        obj = self.get()
        spec = (obj or {}).get("spec") or {}
        if spec.get("holderIdentity") != holder or spec.get("leaseTransitions") != token:
            return False
        freed = {"holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": micro_time()}
        return self._write(obj, freed) and self.row.release(holder, token)

    def fence(self, session: Session, holder: str, token: int) -> None:
        """Check the term against the database fence row, in the caller's transaction."""
        self.row.fence(session, holder, token)


def _unless(status: int, call: Callable[[], dict[str, Any]]) -> dict[str, Any] | None:
    """``call``'s answer, or None when the API server answered ``status``."""
    try:
        return call()
    except KubernetesError as exc:
        if exc.status == status:
            return None
        raise


def kube_lease(settings: Settings, db: Database) -> KubeLease:
    """The Lease ``ha.lease_name`` in ``ha.namespace`` (else the pod's namespace, else
    ``default``), through the ``kubernetes`` settings' credentials."""
    namespace = settings.ha.namespace or pod_namespace() or "default"
    row = SqlLease(db, settings.ha.lease_ttl)
    return KubeLease(settings, namespace, settings.ha.lease_name, row)
