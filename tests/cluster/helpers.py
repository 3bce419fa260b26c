"""Checks shared by the lease backends' tests (the database row, the Kubernetes Lease)."""

from __future__ import annotations

import pytest

from guard.cluster import Leadership
from guard.cluster.status import replicas
from guard.exceptions import NotLeader
from guard.store.db import Database


def one_leads(db: Database, one: Leadership, two: Leadership) -> None:
    """After a tick each: ``one`` leads and may claim; ``two`` is a standby whose claim is
    refused; ``guard cluster status`` says so, in its shape."""
    assert one.is_leader() and not two.is_leader()
    assert two.role == "standby"
    with db.session() as session:
        assert one.claim(session, "step", 7) == one.token
    with pytest.raises(NotLeader), db.session() as session:
        two.claim(session, "step", 8)
    status = {r["id"]: r for r in replicas(db)}
    assert status["one"]["leader"] and status["one"]["lease_until"]
    assert not status["two"]["leader"] and status["two"]["lease_until"] is None
    assert set(status["two"]) == {"id", "pid", "host", "leader", "last_seen", "lease_until"}
