"""``guard cluster status``: every replica's heartbeat and which one holds the lease."""

from __future__ import annotations

from typing import Any

from sqlmodel import col, select

from guard.domain.records import utcnow
from guard.store.cluster import ClusterLease, ClusterReplica
from guard.store.db import Database


def replicas(db: Database, lease: str = "leader") -> list[dict[str, Any]]:
    """One dict per replica: ``id``, ``pid``, ``host``, ``leader``, ``last_seen`` and
    ``lease_until`` (the leader's lease end; None for the others), newest first.

    With a lease row, the leader is its holder while the lease runs; without one (SQLite, one
    process) it is the replica that says so and beat within the last 15 s."""
    with db.session() as session:
        rows = session.exec(
            select(ClusterReplica).order_by(col(ClusterReplica.last_seen).desc())
        ).all()
        held = session.get(ClusterLease, lease)
    now = utcnow()
    out = []
    for r in rows:
        if held is not None and held.holder:
            leader = held.holder == r.id and held.expires_at > now
        else:
            leader = r.role == "leader" and (now - r.last_seen).total_seconds() < 15
        until = held.expires_at if leader and held is not None and held.holder else None
        out.append(
            {
                "id": r.id,
                "pid": r.pid,
                "host": r.host,
                "leader": leader,
                "last_seen": r.last_seen.isoformat(),
                "lease_until": until.isoformat() if until else None,
            }
        )
    return out
