"""Two real `guard run` replicas electing by a Kubernetes Lease (``ha.backend: kubernetes``) on
the local API server, fenced in a real local PostgreSQL: one leader, a takeover after SIGKILL,
and a leader stopped past its Lease that acts on nothing and exits 3 when it wakes."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlmodel import col, select

from guard.domain.records import utcnow
from guard.store.cluster import ClusterAction
from guard.store.models import Incident
from tests.cluster.helpers import Replicas
from tests.conftest import GuardHome
from tests.fakes import postgres as pg_server
from tests.fakes.kube import KubeServer, serve_kube
from tests.helpers.agent import wait_for

pytestmark = pytest.mark.serial  # lease timings: not beside other tests


@pytest.fixture
def kube() -> Iterator[KubeServer]:
    yield from serve_kube()


@pytest.fixture
def cluster(home: GuardHome, kube: KubeServer, postgres_url: str) -> Iterator[Replicas]:
    """Replicas on a fresh Postgres database electing by the Lease guard/guard-leader (3 s),
    each watching one log file."""
    (home.root / "app.log").write_text("")
    home.playbook(
        "app",
        [
            {
                "id": "app-log",
                "type": "logfile",
                "path": str(home.root / "app.log"),
                "every": "1s",
                "rules": [
                    {"kind": "db_down", "pattern": "too many clients", "severity": "critical"}
                ],
            }
        ],
    )
    home.write_config(
        {
            "database_url": pg_server.fresh_database(postgres_url),
            "kubernetes": {"kubeconfig": str(kube.kubeconfig(home.root)), "in_cluster": False},
            "ha": {"backend": "kubernetes", "namespace": "guard", "lease_ttl": "3s"},
        }
    )
    replicas = Replicas(home)
    try:
        yield replicas
    finally:
        replicas.stop_all()


def lease(kube: KubeServer) -> dict[str, Any]:
    with kube.state.cond:
        return dict(kube.state.leases[("guard", "guard-leader")]["spec"])


@pytest.mark.timeout(300)
def test_one_replica_leads_by_the_lease_and_the_other_takes_over_after_sigkill(home, kube, cluster):
    cluster.lead_and_follow()
    status = {r["id"]: r for r in cluster.status()}
    assert status["a"]["leader"] and status["a"]["lease_until"]
    assert not status["b"]["leader"] and status["b"]["lease_until"] is None
    spec = lease(kube)
    assert (spec["holderIdentity"], spec["leaseTransitions"], spec["leaseDurationSeconds"]) == (
        "a",
        1,
        3,
    )
    assert wait_for(lambda: cluster.readyz("b"), 30, "b's /readyz")["role"] == "standby"

    killed_at = time.monotonic()
    cluster.procs["a"].kill()
    wait_for(lambda: lease(kube)["holderIdentity"] == "b", 30, "b to take the Lease")
    takeover = time.monotonic() - killed_at
    print(f"Lease takeover after SIGKILL: {takeover:.1f} s")
    wait_for(lambda: cluster.leader() == "b", 30, "guard cluster status to show b leading")
    wait_for(lambda: "guard running" in cluster.log("b"), 30, "b to run its monitors")
    assert lease(kube)["leaseTransitions"] == 2
    assert cluster.readyz("b")["role"] == "leader"


@pytest.mark.timeout(300)
def test_a_leader_stopped_past_its_lease_acts_on_nothing_when_it_wakes(home, kube, cluster):
    cluster.lead_and_follow()
    a = cluster.procs["a"]
    a.send_signal(signal.SIGSTOP)
    stopped_at = utcnow()
    wait_for(lambda: cluster.leader() == "b", 45, "b to take over from the stopped leader")
    wait_for(lambda: "guard running" in cluster.log("b"), 30, "b to run its monitors")
    time.sleep(2)  # b's log monitor has fixed where "now" is in the file
    with open(home.root / "app.log", "a") as log:
        log.write("FATAL: sorry, too many clients already\n")  # a reads it too when it wakes

    def incident() -> Incident | None:
        with home.database().session() as s:
            return s.exec(select(Incident).where(Incident.kind == "db_down")).first()

    first = wait_for(incident, 60, "b to open the incident")
    a.send_signal(signal.SIGCONT)
    assert a.wait(timeout=60) == 3  # it found its term over, acted on nothing, and left
    assert "lost the leader lease" in cluster.log("a")
    assert lease(kube)["holderIdentity"] == "b"
    with home.database().session() as s:
        [inc] = s.exec(select(Incident).where(Incident.kind == "db_down")).all()
        late = s.exec(
            select(ClusterAction).where(
                ClusterAction.replica == "a", col(ClusterAction.at) >= stopped_at
            )
        ).all()
    assert inc.id == first.id and inc.count == 1  # the signal counted once, by b
    assert late == []
    assert [r["id"] for r in cluster.status()] == ["b"]
