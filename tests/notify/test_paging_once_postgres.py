"""``guard run --once``'s drain with replicas, on a real PostgreSQL server: while another
replica leads, it sends nothing (that leader's worker delivers); with the lease free it takes
it, every send is claimed with its fencing token, and it hands the lease back."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import col, select

from guard import cluster
from guard.cluster import Leadership, Replica, for_settings
from guard.config import Settings
from guard.notify.pagers import enqueue_pages
from guard.notify.pagers.once import deliver_once
from guard.store.cluster import ClusterAction, ClusterReplica
from guard.store.db import Database, open_database
from guard.store.paging import PageOutbox
from tests.fakes.pagerduty import ROUTING_KEY, PagerDutyServer
from tests.fakes.postgres import fresh_database
from tests.helpers.agent import stored_incident


@pytest.fixture
def db(postgres_url: str) -> Iterator[Database]:
    found = open_database(fresh_database(postgres_url))
    previous = cluster.current()
    yield found
    cluster.install(previous)  # the drain leaves its leadership installed, as ``guard run``
    found.dispose()


def replicas(db: Database) -> list[str]:
    with db.session() as session:
        return sorted(session.exec(select(ClusterReplica.id)).all())


def test_the_once_drain_sends_only_while_it_may_lead(
    tmp_path: Path, db: Database, pd: PagerDutyServer
) -> None:
    settings = Settings(
        data_dir=tmp_path,
        ha={"replica_id": "once", "lease_ttl": "30s"},
        notifiers={"pagerduty": {"primary": {"routing_key": ROUTING_KEY, "url": pd.url}}},
    )
    with db.session() as session:
        inc = stored_incident(session, state="awaiting_human")
        enqueue_pages(session, ["pagerduty:primary"], inc, "trigger", key="route:1:0")
    leader = Leadership(db, 30.0, Replica("leader", 1, "elsewhere"))
    assert leader.tick() and leader.is_leader()

    # a leader runs: its worker delivers; the --once process sends nothing and leaves no trace
    assert asyncio.run(deliver_once(settings, db, for_settings(settings, db))) == 0
    assert pd.requests == []
    with db.session() as session:
        assert session.exec(select(PageOutbox.status)).one() == "pending"
    assert replicas(db) == ["leader"]

    # the leader is gone (it handed the lease back): the --once process takes it for the drain
    assert leader.term is not None and leader.lease.release("leader", leader.term.token)
    once = for_settings(settings, db)
    assert asyncio.run(deliver_once(settings, db, once)) == 1
    assert [e["event_action"] for e in pd.events] == ["trigger"]
    with db.session() as session:
        sent = session.exec(
            select(ClusterAction)
            .where(ClusterAction.kind == "page.send")
            .order_by(col(ClusterAction.id))
        ).all()
    assert [(a.replica, a.token) for a in sent] == [("once", leader.term.token + 1)]
    assert replicas(db) == ["leader"]  # its own heartbeat row dropped on the way out
    # and it handed the lease back: another replica leads at once, without waiting out the TTL
    after = Leadership(db, 30.0, Replica("next", 2, "elsewhere"))
    assert after.tick() and after.is_leader()
