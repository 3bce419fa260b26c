"""The Kubernetes Lease backend, in process: elected by a coordination.k8s.io Lease on the local
API server (tests/fakes/kube.py), fenced by the token in a real local PostgreSQL."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import col, select

from guard.cluster import Leadership, Replica, for_settings
from guard.cluster.kube_lease import KubeLease, kube_lease
from guard.cluster.lease import SqlLease
from guard.cluster.status import replicas
from guard.config import KubernetesSettings, Settings
from guard.domain.exceptions import NotLeader
from guard.k8s import KubeClient, pod_namespace
from guard.store.cluster import ClusterAction, ClusterLease
from guard.store.db import Database, open_database
from guard.store.models import MonitorState
from tests.cluster.helpers import one_leads
from tests.fakes import postgres as pg_server
from tests.fakes.kube import KubeServer, serve_kube

LEASES = "/apis/coordination.k8s.io/v1/namespaces/guard/leases"


@pytest.fixture
def kube() -> Iterator[KubeServer]:
    yield from serve_kube()


@pytest.fixture
def db(postgres_url: str) -> Iterator[Database]:
    database = open_database(pg_server.fresh_database(postgres_url))
    yield database
    database.dispose()


@pytest.fixture
def lease_for(kube: KubeServer, db: Database, tmp_path: Path) -> Any:
    """A new replica's view of the Lease ``guard/guard-leader`` (its own client and clock)."""
    settings = KubernetesSettings(kubeconfig=kube.kubeconfig(tmp_path), in_cluster=False)

    def make(ttl: float = 15) -> KubeLease:
        return KubeLease(KubeClient(settings), "guard", "guard-leader", SqlLease(db, ttl))

    return make


def leader(name: str, lease: KubeLease, db: Database) -> Leadership:
    return Leadership(db, lease.row.ttl, Replica(name, 1, f"host-{name}"), lease)


def lapse(lease: KubeLease) -> None:
    """As if ``lease``'s replica had watched the Lease go unrenewed for its whole duration."""
    version, seen = lease._seen
    lease._seen = (version, seen - lease.duration - 1)


def stored(kube: KubeServer) -> dict[str, Any]:
    return dict(kube.state.leases[("guard", "guard-leader")])


def test_two_replicas_elect_exactly_one_leader(lease_for, kube, db):
    one = leader("one", lease_for(), db)
    two = leader("two", lease_for(), db)
    assert one.tick() and two.tick()
    spec = stored(kube)["spec"]
    assert spec["holderIdentity"] == "one" and spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == one.token == 1
    assert datetime.fromisoformat(spec["acquireTime"]).tzinfo is not None
    assert spec["renewTime"] == spec["acquireTime"]
    one_leads(db, one, two)  # guard cluster status reads the fence row, in the same shape
    seen = two.lease.read()
    assert seen is not None and (seen.holder, seen.token) == ("one", 1)
    assert seen.expires_at > datetime.fromisoformat(spec["renewTime"])
    # renewing keeps the term: a PUT of renewTime with the resourceVersion it read
    renewed_before = spec["renewTime"]
    assert one.tick() and one.token == 1
    assert stored(kube)["spec"]["renewTime"] > renewed_before
    assert [r.body["metadata"]["resourceVersion"] for r in kube.sent("PUT", LEASES)]


def test_the_standby_takes_over_when_the_leaders_lease_runs_out(lease_for, kube, db):
    a_lease, b_lease = lease_for(), lease_for()
    a, b = leader("a", a_lease, db), leader("b", b_lease, db)
    assert a.tick() and b.tick() and a.is_leader()
    assert b.tick() and not b.is_leader()  # a renews: b sees the Lease change, waits on
    lapse(b_lease)  # a stops renewing (SIGSTOP, a dead node) for the Lease's duration
    assert b.tick() and b.is_leader() and b.token == 2
    spec = stored(kube)["spec"]
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 2
    with db.session() as session:
        row = session.get(ClusterLease, "leader")
        assert row is not None and (row.holder, row.token) == ("b", 2)
    status = {r["id"]: r["leader"] for r in replicas(db)}
    assert status == {"a": False, "b": True}


def test_a_deposed_leader_that_wakes_late_cannot_act(lease_for, kube, db):
    a_lease, b_lease = lease_for(), lease_for()
    a, b = leader("a", a_lease, db), leader("b", b_lease, db)
    assert a.tick() and b.tick()
    lapse(b_lease)
    assert b.tick() and b.is_leader()
    # a has not noticed: by its own clock its term still runs, but the database fence says no,
    # in the same transaction as its claim, which is rolled back
    assert a.is_leader()
    with pytest.raises(NotLeader), db.session() as session:
        session.add(MonitorState(key="claimed-by-a", value={}))
        a.claim(session, "step", 9)
    with db.session() as session:
        assert session.get(MonitorState, "claimed-by-a") is None
        assert b.claim(session, "step", 9) == 2
    # its next tick finds the Lease taken and deposes it for good
    assert not a.tick() and a.deposed and a.role == "deposed"
    with db.session() as session:
        claims = session.exec(select(ClusterAction).order_by(col(ClusterAction.id))).all()
    assert [(c.replica, c.token) for c in claims] == [("b", 2)]


def test_a_lapsed_term_is_not_renewed_even_by_its_holder(lease_for, kube, db):
    a_lease = lease_for()
    a = leader("a", a_lease, db)
    assert a.tick() and a.token == 1
    lapse(a_lease)  # stopped past its lease, nobody took over
    assert not a.tick() and a.deposed  # its term 1 is over (the tick took term 2): it steps down
    assert stored(kube)["spec"]["leaseTransitions"] == 2
    with pytest.raises(NotLeader), db.session() as session:
        a_lease.fence(session, "a", 1)


@pytest.mark.serial  # six threads must all reach the API server before one creates the Lease
def test_racing_replicas_create_the_lease_exactly_once(lease_for, kube, db):
    leases = [lease_for() for _ in range(6)]
    barrier = threading.Barrier(len(leases))
    results: list[Any] = []

    def race(i: int) -> None:
        barrier.wait()
        results.append(leases[i].acquire(f"r{i}"))

    threads = [threading.Thread(target=race, args=(i,)) for i in range(len(leases))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    winners = [r for r in results if r is not None]
    assert len(results) == len(leases) and len(winners) == 1 and winners[0].token == 1
    assert stored(kube)["spec"]["holderIdentity"] == winners[0].holder
    # a race happened: several replicas found no Lease and tried to create it; one did, the
    # others got 409 AlreadyExists (a replica that read after the creation does not POST)
    assert len(kube.sent("POST", LEASES)) >= 2


def test_a_stale_resource_version_loses_the_takeover(lease_for, kube, db):
    """Two standbys read the expired Lease; the API server takes the first PUT and answers
    the second 409 Conflict: exactly one new term."""
    a_lease, b_lease, c_lease = lease_for(), lease_for(), lease_for()
    assert a_lease.acquire("a") is not None
    old = b_lease.get()
    assert old is not None and c_lease.get() is not None
    lapse(b_lease)
    lapse(c_lease)
    assert b_lease._take(old, "b") is not None
    assert c_lease._take(old, "c") is None  # the version it read is gone
    assert stored(kube)["spec"]["holderIdentity"] == "b"


def test_release_hands_over_at_once(lease_for, kube, db):
    a_lease, b_lease = lease_for(), lease_for()
    term = a_lease.acquire("a")
    assert term is not None and b_lease.acquire("b") is None
    assert a_lease.release("a", term.token)
    assert stored(kube)["spec"]["holderIdentity"] == ""
    taken = b_lease.acquire("b")  # no wait: an empty holder is free
    assert taken is not None and taken.token == 2


def test_tokens_keep_growing_when_the_lease_is_recreated(lease_for, kube, db):
    """The database fence row remembers the largest token: a deleted and recreated Lease
    (its leaseTransitions back at 0) still starts a term above every earlier one."""
    a_lease = lease_for()
    for _ in range(3):
        assert a_lease.acquire("a") is not None
        lapse(a_lease)
    kube.state.leases.clear()
    again = lease_for().acquire("b")
    assert again is not None and again.token == 4
    assert stored(kube)["spec"]["leaseTransitions"] == 4


def test_the_kubernetes_backend_is_chosen_by_the_settings(kube, db, tmp_path):
    settings = Settings(
        database_url=str(db.engine.url.render_as_string(hide_password=False)),
        kubernetes={"kubeconfig": kube.kubeconfig(tmp_path), "in_cluster": False},
        ha={"backend": "kubernetes", "namespace": "guard", "lease_ttl": "5s"},
    )
    chosen = for_settings(settings, db)
    assert isinstance(chosen, Leadership) and isinstance(chosen.lease, KubeLease)
    assert chosen.lease.name == "guard-leader" and chosen.lease.duration == 5
    assert chosen.tick() and chosen.is_leader()
    assert stored(kube)["spec"]["holderIdentity"] == chosen.replica.id
    by_row = for_settings(Settings(database_url=settings.database_url), db)
    assert isinstance(by_row, Leadership) and isinstance(by_row.lease, SqlLease)


def test_the_namespace_defaults_to_the_pods(db, tmp_path):
    assert pod_namespace(tmp_path / "absent") is None
    (tmp_path / "namespace").write_text("guard-ns\n")
    assert pod_namespace(tmp_path / "namespace") == "guard-ns"
    settings = Settings(ha={"backend": "kubernetes"})
    assert kube_lease(settings, db).namespace in {pod_namespace(), "default"}
    settings = Settings(ha={"backend": "kubernetes", "namespace": "ops"})
    assert kube_lease(settings, db).namespace == "ops"


async def test_a_leader_renews_the_lease_in_time_and_hands_it_over(lease_for, kube, db):
    """Two Leadership loops on 2 s leases: the leader keeps the Lease for several durations;
    when it stops it hands it over, and the standby leads at once with the next token."""
    one = leader("one", lease_for(2), db)
    two = leader("two", lease_for(2), db)
    stop_one, stop_two = asyncio.Event(), asyncio.Event()
    first = asyncio.create_task(one.run(stop_one, lambda: None))
    assert await asyncio.wait_for(one.elected(stop_one), 30)
    second = asyncio.create_task(two.run(stop_two, lambda: None))
    await asyncio.sleep(5)  # two and a half lease durations
    assert one.is_leader() and not two.is_leader() and one.token == 1
    stop_one.set()
    await asyncio.wait_for(first, 30)
    assert await asyncio.wait_for(two.elected(stop_two), 30)
    assert two.token == 2
    stop_two.set()
    await asyncio.wait_for(second, 30)
    assert stored(kube)["spec"]["holderIdentity"] == ""
