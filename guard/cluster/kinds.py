"""Lease backends: one entry per ``ha.backend`` says how the leader's lease is held.

``database`` is the lease row in Guard's own PostgreSQL (``SqlLease``: ``Leadership`` makes it
when given none); ``kubernetes`` is a Lease object, fenced by that row
(``guard.cluster.kube_lease``; the Kubernetes client is imported only then). ``for_settings``
reads this table; ``ha.backend``'s allowed values are its keys
(``tests/contracts/test_plugin_tables.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from guard.cluster.lease import Lease
from guard.config import Settings
from guard.store.db import Database


@dataclass(frozen=True)
class LeaseBackend:
    """One backend: the lease it makes (None: Leadership's own lease row)."""

    name: str
    lease: Callable[[Settings, Database], Lease | None]


def _database(settings: Settings, db: Database) -> Lease | None:
    return None


def _kubernetes(settings: Settings, db: Database) -> Lease | None:
    from guard.cluster.kube_lease import kube_lease

    return kube_lease(settings, db)


LEASE_BACKENDS: dict[str, LeaseBackend] = {
    b.name: b
    for b in (LeaseBackend("database", _database), LeaseBackend("kubernetes", _kubernetes))
}
