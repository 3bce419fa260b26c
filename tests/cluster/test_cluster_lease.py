"""The leader lease and fencing, in process, on real SQLite and a real local PostgreSQL."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import update
from sqlmodel import col, select

from guard.cluster import Leadership, Replica, Solo, SqlLease
from guard.domain.exceptions import NotLeader
from guard.domain.records import utcnow
from guard.store.cluster import ClusterAction, ClusterLease
from guard.store.db import Database, open_database
from guard.store.models import MonitorState
from guard.telemetry.metrics import REGISTRY
from tests.cluster.helpers import one_leads
from tests.fakes import postgres as pg_server


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Database]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'guard.db'}"
    else:
        url = pg_server.fresh_database(request.getfixturevalue("postgres_url"))
    database = open_database(url)
    yield database
    database.dispose()


def lapse(db: Database) -> None:
    """Make the current lease run out (as if its holder stopped renewing a TTL ago)."""
    with db.session() as session:
        session.execute(update(ClusterLease).values(expires_at=utcnow() - timedelta(seconds=1)))


def test_the_first_replica_acquires_and_the_second_waits(db):
    lease = SqlLease(db, ttl=15)
    a = lease.acquire("a")
    assert a is not None and a.token == 1 and a.holder == "a"
    assert lease.acquire("b") is None
    assert lease.read() == a


def test_renewing_keeps_the_token_and_extends_the_lease(db):
    lease = SqlLease(db, ttl=15)
    first = lease.acquire("a")
    assert first is not None
    again = lease.acquire("a", first.token)
    assert again is not None and again.token == first.token
    assert again.expires_at >= first.expires_at
    assert lease.acquire("b") is None


def test_an_expired_lease_is_taken_over_with_a_new_token(db):
    lease = SqlLease(db, ttl=15)
    a = lease.acquire("a")
    assert a is not None
    lapse(db)
    b = lease.acquire("b")
    assert b is not None and b.token == a.token + 1
    # the old holder cannot renew its term, nor take the lease back while b's runs
    assert lease.acquire("a", a.token) is None
    # a term that lapsed is never renewed, even by its own holder: it gets a new one
    lapse(db)
    again = lease.acquire("b", b.token)
    assert again is not None and again.token == b.token + 1


def test_tokens_only_grow_across_takeovers(db):
    lease = SqlLease(db, ttl=15)
    tokens = []
    for holder in ["a", "b", "a", "c", "b", "a"]:
        term = lease.acquire(holder)
        assert term is not None
        tokens.append(term.token)
        lapse(db)
    assert tokens == sorted(tokens) and len(set(tokens)) == len(tokens)


def test_a_stale_token_is_refused_and_its_claim_rolled_back(db):
    lease = SqlLease(db, ttl=15)
    a = lease.acquire("a")
    assert a is not None
    with db.session() as session:
        lease.fence(session, "a", a.token)  # the current term passes
    lapse(db)
    b = lease.acquire("b")
    assert b is not None
    with pytest.raises(NotLeader), db.session() as session:
        session.add(MonitorState(key="claimed-by-a", value={}))
        lease.fence(session, "a", a.token)
    with db.session() as session:
        assert session.get(MonitorState, "claimed-by-a") is None
        lease.fence(session, "b", b.token)


def test_a_lapsed_term_is_refused_even_when_nobody_took_over(db):
    lease = SqlLease(db, ttl=15)
    a = lease.acquire("a")
    assert a is not None
    lapse(db)
    with pytest.raises(NotLeader), db.session() as session:
        lease.fence(session, "a", a.token)


def test_release_hands_the_lease_over_at_once(db):
    lease = SqlLease(db, ttl=15)
    a = lease.acquire("a")
    assert a is not None
    assert lease.release("a", a.token)
    b = lease.acquire("b")
    assert b is not None and b.token == a.token + 1


def test_leadership_elects_one_and_deposes_the_old_leader(db):
    one = Leadership(db, 15, Replica("one", 1, "h1"))
    two = Leadership(db, 15, Replica("two", 2, "h2"))
    assert one.tick() and two.tick()
    one_leads(db, one, two)

    assert REGISTRY.get_sample_value("guard_leader") == 0  # the last tick was the standby's

    lapse(db)
    assert two.tick() and two.is_leader()
    assert two.token == 2
    assert REGISTRY.get_sample_value("guard_leader") == 1
    assert not one.tick()  # its term is over: deposed, for good
    assert one.deposed and not one.is_leader() and one.role == "deposed"
    lapse(db)
    assert not one.tick() and not one.is_leader()  # a deposed replica never leads again
    with pytest.raises(NotLeader), db.session() as session:
        one.claim(session, "step", 9)
    with db.session() as session:
        claims = session.exec(select(ClusterAction).order_by(col(ClusterAction.id))).all()
    assert [(c.kind, c.ref, c.token, c.replica) for c in claims] == [("step", "7", 1, "one")]


def test_a_leader_that_cannot_renew_stops_leading_by_its_own_clock(db):
    one = Leadership(db, 15, Replica("one", 1, "h1"))
    assert one.tick() and one.is_leader()
    one._valid_until = time.monotonic() - 1  # as if it had slept (SIGSTOP) past its lease
    assert not one.is_leader()
    with pytest.raises(NotLeader), db.session() as session:
        one.fence(session)


def test_work_left_on_a_thread_after_a_replica_stops_is_still_fenced(db):
    """A triage batch still on its thread when a deposed replica's ``guard run`` returned once
    found the default ``Solo`` installed again, and stored a signal the new leader had
    already counted."""
    from guard import cluster

    before = cluster.current()
    one = Leadership(db, 15, Replica("one", 1, "h1"))
    two = Leadership(db, 15, Replica("two", 2, "h2"))
    try:
        assert one.tick()
        with cluster.installed(one):
            assert cluster.current() is one
            lapse(db)
            assert two.tick() and two.is_leader()
            assert not one.tick()  # deposed: its run ends
        assert cluster.current() is one  # not Solo, which fences nothing
        with pytest.raises(NotLeader), db.session() as session:
            cluster.current().fence(session)
    finally:
        cluster.install(before)
    solo = Solo()
    with cluster.installed(solo):
        assert cluster.current() is solo
    assert cluster.current() is before  # a single box puts back what was there


def test_solo_is_always_the_leader_and_writes_no_claims(db):
    solo = Solo(db)
    with db.session() as session:
        assert solo.is_leader() and solo.claim(session, "step", 1) == 0
        assert session.exec(select(ClusterAction)).all() == []


def test_racing_standbys_take_over_exactly_once(postgres_url):
    db = open_database(pg_server.fresh_database(postgres_url))
    lease = SqlLease(db, ttl=15)
    assert lease.acquire("old") is not None
    lapse(db)
    results: list[Any] = []
    barrier = threading.Barrier(8)

    def race(name: str) -> None:
        barrier.wait()
        results.append(lease.acquire(name))

    threads = [threading.Thread(target=race, args=(f"r{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    winners = [r for r in results if r is not None]
    assert len(results) == 8 and len(winners) == 1 and winners[0].token == 2
    db.dispose()


def test_a_takeover_waits_for_a_claim_in_flight(postgres_url):
    """On Postgres the fence locks the lease row (FOR SHARE): a takeover cannot slip in
    between a leader's check and the commit of what it claimed."""
    db = open_database(pg_server.fresh_database(postgres_url))
    lease = SqlLease(db, ttl=1.0)
    a = lease.acquire("a")
    assert a is not None
    taken: list[Any] = []
    with db.session() as session:
        lease.fence(session, "a", a.token)
        session.add(MonitorState(key="claimed-by-a", value={}))
        time.sleep(1.2)  # the lease runs out while the claim is still open
        thief = threading.Thread(target=lambda: taken.append(lease.acquire("b")))
        thief.start()
        thief.join(1.0)
        assert thief.is_alive() and not taken  # it waits on the row lock
    thief.join(30)
    assert taken and taken[0] is not None and taken[0].token == a.token + 1
    with db.session() as session:
        assert session.get(MonitorState, "claimed-by-a") is not None
    db.dispose()


async def test_a_leader_cut_off_from_the_database_deposes_itself(db, monkeypatch):
    """Postgres down: no renewal goes through, so once its lease is overdue (by its own clock)
    the leader stops acting and asks to be stopped."""
    import asyncio

    from sqlalchemy.exc import OperationalError

    one = Leadership(db, 1.5, Replica("one", 1, "h1"))
    stop, deposed = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(one.run(stop, deposed.set))
    assert await asyncio.wait_for(one.elected(stop), 30)

    def down(*_args: Any) -> None:
        raise OperationalError("SELECT 1", {}, Exception("connection refused"))

    monkeypatch.setattr(one.lease, "acquire", down)
    await asyncio.wait_for(deposed.wait(), 30)
    assert one.deposed and not one.is_leader()
    with pytest.raises(NotLeader), db.session() as session:
        one.fence(session)
    stop.set()
    await asyncio.wait_for(task, 30)
