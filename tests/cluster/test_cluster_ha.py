"""Two (and three) real `guard run` replicas on one real local PostgreSQL, with a real Docker
engine and the local Bot API server: one leader, faults handled once, failover and fencing."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from sqlmodel import col, select

from guard.domain.records import utcnow
from guard.store.cluster import ClusterAction
from guard.store.models import AuditEntry, Incident, RemediationRun
from tests.cluster.helpers import Replicas
from tests.conftest import GuardHome
from tests.fakes import postgres as pg_server
from tests.fakes.telegram import TelegramServer
from tests.helpers.agent import setup_docker_home, show, tune_skill, wait_for
from tests.helpers.telegram import ADMIN, CHAT, TOKEN, buttons

pytestmark = [pytest.mark.docker, pytest.mark.serial]  # lease timings: not beside other tests


@pytest.fixture
def cluster(home: GuardHome, tg: TelegramServer, postgres_url: str) -> Iterator[Any]:
    """A Guard home on a fresh Postgres database, electing by a 5 s lease (a standby takes over
    in seconds, not after the default 15: the serial run took 30 s less; the Kubernetes HA
    tests hold 3 s ones), watching containers with a unique label; the built-in
    docker-start-exited skill asks for approval (so every fault is announced)."""
    labels = setup_docker_home(
        home,
        skills=["docker-start-exited"],
        database_url=pg_server.fresh_database(postgres_url),
        ha={"lease_ttl": "5s"},
        telegram={
            "bot_token": TOKEN,
            "chat_id": CHAT,
            "allowed_user_ids": [ADMIN],
            "api_base_url": tg.url,
            "poll_timeout": "1s",
        },
    )
    tune_skill(
        home,
        "docker-start-exited",
        trust="approval",
        steps=[
            {"action": "docker.start", "args": {"container": "{{ incident.target }}"}},
            {"verify": {"timeout": "15s", "interval": "500ms"}},
        ],
    )
    replicas = Replicas(home)
    try:
        yield labels, replicas
    finally:
        replicas.stop_all()


def stored(home: GuardHome, target: str) -> list[Incident]:
    with home.database().session() as s:
        return list(s.exec(select(Incident).where(Incident.target == target)).all())


def runs(home: GuardHome, incident_id: int) -> list[RemediationRun]:
    with home.database().session() as s:
        return list(
            s.exec(select(RemediationRun).where(RemediationRun.incident_id == incident_id)).all()
        )


def announcements(tg: TelegramServer, incident_id: int) -> list[dict[str, Any]]:
    """The incident messages (with buttons) Telegram received about an incident."""
    return [
        c["params"]
        for c in tg.sent("sendMessage")
        if f"Incident #{incident_id}" in str(c["params"].get("text", ""))
        and c["params"].get("reply_markup")
    ]


def asked(home: GuardHome, tg: TelegramServer, target: str, within: float = 60) -> int:
    """Wait until Guard asked about ``target``'s incident on Telegram; its id."""
    inc = wait_for(
        lambda: next((i for i in stored(home, target) if i.state == "awaiting_human"), None),
        within,
        f"an incident about {target} awaiting a human",
    )
    wait_for(lambda: announcements(tg, inc.id), 30, "the announcement")
    return int(inc.id)


def approve(home: GuardHome, tg: TelegramServer, incident_id: int) -> None:
    msg = next(m for m in tg.bot_messages(f"Incident #{incident_id}") if "reply_markup" in m)
    run = next(d for label, d in buttons(msg) if "docker-start-exited" in label)
    tg.press(ADMIN, run, chat_id=CHAT, message_id=msg["message_id"])
    wait_for(lambda: show(home, incident_id)["state"] == "resolved", 60, "the remedy to cure it")


def handled_once(home: GuardHome, tg: TelegramServer, target: str, incident_id: int) -> None:
    """One incident (its signal counted once), one announcement, one remediation run, and
    one ``docker.start`` on the container."""
    [inc] = stored(home, target)
    assert inc.id == incident_id and inc.count == 1, (inc.id, inc.count)
    assert len(announcements(tg, incident_id)) == 1
    [run] = runs(home, incident_id)
    assert run.status == "verified"
    with home.database().session() as s:
        starts = s.exec(
            select(AuditEntry).where(
                AuditEntry.action == "action.docker.start",
                AuditEntry.subject == f"incident:{incident_id}",
            )
        ).all()
    assert len(starts) == 1


@pytest.mark.timeout(420)
def test_one_leader_acts_once_and_a_standby_takes_over_after_sigkill(home, tg, cluster, containers):
    labels, replicas = cluster
    replicas.lead_and_follow()
    status = {r["id"]: r for r in replicas.status()}
    assert status["a"]["leader"] and status["a"]["lease_until"]
    assert not status["b"]["leader"] and status["b"]["lease_until"] is None
    assert {r["pid"] for r in status.values()} == {p.pid for p in replicas.procs.values()}
    assert replicas.readyz("a")["role"] == "leader"
    assert wait_for(lambda: replicas.readyz("b"), 30, "b's /readyz")["role"] == "standby"

    # one fault: counted once, announced once, remediated once (after the human's approval)
    v1 = containers.run("v1", "sleep 600", labels=labels)
    v2 = containers.run("v2", "sleep 600", labels=labels)
    v1.kill()
    first = asked(home, tg, v1.name)
    approve(home, tg, first)
    handled_once(home, tg, v1.name, first)
    assert "guard running" not in replicas.log("b")  # the standby never ran a monitor

    # SIGKILL the leader, and raise a fault while nobody leads
    killed_at = time.monotonic()
    replicas.procs["a"].kill()
    v2.kill()
    wait_for(lambda: replicas.leader() == "b", 30, "b to take over within 30 s")
    takeover = time.monotonic() - killed_at
    print(f"takeover after SIGKILL: {takeover:.1f} s")
    second = asked(home, tg, v2.name)
    approve(home, tg, second)
    handled_once(home, tg, v2.name, second)
    handled_once(home, tg, v1.name, first)  # the new leader did not redo the first one
    assert replicas.readyz("b")["role"] == "leader"
    with home.database().session() as s:
        tokens = {a.replica: a.token for a in s.exec(select(ClusterAction)).all()}
    assert tokens["a"] < tokens["b"]


@pytest.mark.timeout(420)
def test_a_leader_stopped_past_its_lease_performs_no_action_when_it_wakes(
    home, tg, cluster, containers
):
    labels, replicas = cluster
    replicas.lead_and_follow()
    v1 = containers.run("v1", "sleep 600", labels=labels)
    time.sleep(1)  # a's events stream has seen it start

    a = replicas.procs["a"]
    a.send_signal(signal.SIGSTOP)
    stopped_at = utcnow()
    wait_for(lambda: replicas.leader() == "b", 45, "b to take over from the stopped leader")
    wait_for(lambda: "guard running" in replicas.log("b"), 30, "b to run its monitors")
    # b's first poll has seen v1 running (else, on a slow box, it could see v1 exited too
    # and count the kill a second time, beside its events stream)
    wait_for(lambda: replicas.signals("b", "container_running") >= 1, 30, "b's first poll")
    v1.kill()  # the engine queues this event on a's stream too: a reads it when it wakes
    first = asked(home, tg, v1.name)

    a.send_signal(signal.SIGCONT)
    assert a.wait(timeout=60) == 3  # it found its term over, acted on nothing, and left
    assert "lost the leader lease" in replicas.log("a")
    approve(home, tg, first)
    handled_once(home, tg, v1.name, first)
    with home.database().session() as s:
        late = s.exec(
            select(ClusterAction).where(
                ClusterAction.replica == "a", col(ClusterAction.at) >= stopped_at
            )
        ).all()
        assert late == []  # no step, no message queued or sent by the deposed leader
        by_b = s.exec(select(ClusterAction).where(ClusterAction.replica == "b")).all()
    assert by_b and all(x.token == 2 for x in by_b)
    assert [r["id"] for r in replicas.status()] == ["b"]
    assert isinstance(datetime.fromisoformat(replicas.status()[0]["lease_until"]), datetime)
