"""Replicas with a leader: who may act, and the fencing token every action carries.

``guard run`` installs this process's ``Leadership`` (Postgres) or ``Solo`` (SQLite: always the
leader); the places where Guard acts (a remediation step, a Telegram message queued or sent, a
triage batch, a human command taken) call ``current().claim``/``fence`` inside the transaction
that claims the action, so a replica that is not the leader cannot act. CLI commands and
``guard run --once`` keep the default ``Solo``.
"""

from __future__ import annotations

from guard.cluster.leader import Leadership, Replica, Solo
from guard.cluster.lease import SqlLease, Term
from guard.config import Settings
from guard.store.db import Database

_current: Leadership | Solo = Solo()


def current() -> Leadership | Solo:
    """This process's leadership (``Solo`` unless ``guard run`` installed another)."""
    return _current


def install(leadership: Leadership | Solo) -> None:
    global _current
    _current = leadership


def for_settings(settings: Settings, db: Database) -> Leadership | Solo:
    """A leader election on Postgres (unless ``ha.enabled`` is off), else ``Solo``."""
    replica = Replica.this(settings.ha.replica_id)
    if db.is_postgres and settings.ha.enabled:
        return Leadership(db, settings.ha.lease_ttl, replica)
    return Solo(db, replica)


__all__ = [
    "Leadership",
    "Replica",
    "Solo",
    "SqlLease",
    "Term",
    "current",
    "for_settings",
    "install",
]
