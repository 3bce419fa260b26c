"""Replicas with a leader: who may act, and the fencing token every action carries.

``guard run`` installs this process's ``Leadership`` (Postgres; elected by a lease row, or by a
Kubernetes Lease in ``kube_lease``) or ``Solo`` (SQLite: always the leader); the places where
Guard acts (a remediation step, a chat message queued or sent, a triage batch, a human
command taken) call ``current().claim``/``fence`` inside the transaction that claims the
action, so a replica that is not the leader cannot act. CLI commands and ``guard run --once``
keep the default ``Solo``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from guard.cluster.kinds import LEASE_BACKENDS
from guard.cluster.leader import Leadership, Replica, Solo
from guard.cluster.lease import Lease, SqlLease, Term
from guard.config import Settings
from guard.store.db import Database

_current: Leadership | Solo = Solo()


def current() -> Leadership | Solo:
    """This process's leadership (``Solo`` unless ``guard run`` installed another)."""
    return _current


def install(leadership: Leadership | Solo) -> None:
    global _current
    _current = leadership


@contextlib.contextmanager
def installed(leadership: Leadership | Solo) -> Iterator[None]:
    """Install ``leadership`` for a ``guard run``. A replica's stays installed afterwards: its
    term is over (released or deposed), so work still on a thread when the run returned (a
    triage batch, a step) is refused by its fence instead of finding ``Solo`` and acting."""
    previous = current()
    install(leadership)
    try:
        yield
    finally:
        if not leadership.ha:
            install(previous)


def for_settings(settings: Settings, db: Database) -> Leadership | Solo:
    """A leader election on Postgres (unless ``ha.enabled`` is off), else ``Solo``: by the
    lease row, or with ``ha.backend: kubernetes`` by a Lease (fenced by the row)."""
    replica = Replica.this(settings.ha.replica_id)
    if not (db.is_postgres and settings.ha.enabled):
        return Solo(db, replica)
    lease = LEASE_BACKENDS[settings.ha.backend].lease(settings, db)
    return Leadership(db, settings.ha.lease_ttl, replica, lease)


__all__ = [
    "Leadership",
    "Lease",
    "Replica",
    "Solo",
    "SqlLease",
    "Term",
    "current",
    "for_settings",
    "install",
    "installed",
]
