"""The PostgreSQL starter skills against a real PostgreSQL 15 (the stack image, built offline)
under a real ``guard run`` that follows the database container's log: every ordinary slot held
by sessions left idle in a transaction, then an ``UPDATE`` blocked by one. Each time the
incident's question carries ``probe.postgres``'s evidence (who holds the slots; who blocks
whom), and once approved ``postgres.terminate`` ends the idle transactions and the log rule that
fired goes quiet: clients get in, the waiter gets its lock."""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Iterator
from functools import partial
from typing import Any

import psycopg
import pytest
import yaml

from tests.conftest import GuardHome
from tests.helpers.agent import db_rows, running_guard, setup_docker_home, show, wait_for
from tests.helpers.starter import approve_and_heal
from tests.probes.test_stores import MAX_CONNECTIONS, PG_START, PREFIX, _connect, daemon

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]  # the stack image: built once

NAME = f"{PREFIX}-starter-db"
LOCK_LOG = " -c log_lock_waits=on -c deadlock_timeout=200ms"
RULES = [
    {
        "kind": "pg_connections",
        "pattern": "sorry, too many clients already|remaining connection slots are reserved",
        "quiet": "3s",
    },
    {"kind": "pg_lock_wait", "pattern": "still waiting for [A-Za-z]*Lock on", "quiet": "3s"},
]


@pytest.fixture(scope="module")
def pg(docker_client: Any) -> Iterator[int]:
    cmd = ["sh", "-c", PG_START + LOCK_LOG]
    labels = {"guard.test.starter": NAME}  # the monitor's selector: this container alone
    with daemon(docker_client, "starter-db", cmd, 5432, user="postgres", labels=labels) as port:

        def ready() -> bool:
            with contextlib.suppress(psycopg.OperationalError):
                _connect(port, "postgres").close()
                return True
            return False

        wait_for(ready, 60, "PostgreSQL to accept connections")
        with _connect(port, "postgres") as admin:
            admin.autocommit = True
            admin.execute("CREATE ROLE app LOGIN")
            admin.execute("CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0)")
            admin.execute("GRANT ALL ON t TO app")
        yield port


def guard_home(home: GuardHome, port: int, skill: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Guard following the database's log, its probe and terminate through PG_GUARD_URL (a
    superuser: on PostgreSQL 15 only one gets in at max_connections); the skill's age made 2s."""
    monkeypatch.setenv("PG_GUARD_URL", f"postgresql://postgres@127.0.0.1:{port}/postgres")
    setup_docker_home(
        home,
        skills=[skill],
        probes={"allow": [{"host": "127.0.0.1", "ports": [port]}], "secrets": ["PG_GUARD_URL"]},
    )
    monitor = {
        "id": "db",
        "type": "docker",
        "selector": {"label": f"guard.test.starter={NAME}"},
        "every": "1h",
    }
    home.playbook("db", [{**monitor, "rules": RULES}])
    path = home.root / "skills" / skill / "skill.yaml"
    spec = yaml.safe_load(path.read_text())
    spec["steps"][0]["args"]["older_than"] = "2s"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))


def idle_in_transaction(port: int) -> psycopg.Connection[Any]:
    conn = _connect(port, "app")
    conn.execute("SELECT 1")  # psycopg opened a transaction: the session is idle in it
    return conn


def keep_trying(stop: threading.Event, attempt: Any, results: list[bool]) -> threading.Thread:
    """``attempt()`` every 0.3 s until ``stop``: the application that keeps failing."""

    def loop() -> None:
        while not stop.wait(0.3):
            try:
                attempt()
                results.append(True)
            except psycopg.Error:
                results.append(False)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def test_out_of_connections_is_diagnosed_and_idle_transactions_are_ended(
    home: GuardHome, pg: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    skill = "postgres-out-of-connections"
    guard_home(home, pg, skill, monkeypatch)
    ordinary = MAX_CONNECTIONS - 3  # the rest are reserved for superusers
    held = [idle_in_transaction(pg) for _ in range(ordinary)]
    stop, results = threading.Event(), list[bool]()
    try:
        with running_guard(home) as (_, log):
            client = keep_trying(stop, lambda: _connect(pg, "app").close(), results)
            record, asked = approve_and_heal(home, log, "pg_connections", skill)
            results.clear()
            wait_for(lambda: results[-3:] == [True] * 3, 30, "clients to get in")
            stop.set()
            client.join(5)
    finally:
        stop.set()
        for conn in held:
            conn.close()
    evidence = record["details"]["evidence"]
    assert "queries=connections,locks" in evidence, evidence
    assert f"connections ({ordinary + 1} of max_connections {MAX_CONNECTIONS}" in evidence
    assert f"state=idle in transaction, user=app, app=guard-test, n={ordinary}" in evidence
    assert f"state=idle in transaction, user=app, app=guard-test, n={ordinary}" in asked, asked
    assert f"guard approve {record['id']} --skill {skill}" in asked
    assert "postgres.terminate" in asked, asked  # what the skill does, in its offer
    [(status, by)] = db_rows(home, "select status, approved_by from remediation_run")
    assert status == "verified" and by.startswith("cli:")
    healed = show(home, record["id"])["timeline"]
    ended = " ".join(t["message"] for t in healed)
    assert f"terminated {ordinary} session(s)" in ended, ended


def test_a_lock_wait_names_its_blocker_which_is_ended(
    home: GuardHome, pg: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    skill = "postgres-lock-waits"
    guard_home(home, pg, skill, monkeypatch)
    blocker = _connect(pg, "app")
    blocker.execute("UPDATE t SET v = 1 WHERE id = 1")  # then idle, holding the row's lock
    waiters = [_connect(pg, "app") for _ in range(2)]  # one of them is always waiting
    for waiter in waiters:
        waiter.autocommit = True
        waiter.execute("SET lock_timeout = '5s'")
    blocking = blocker.info.backend_pid
    stop, results = threading.Event(), list[bool]()
    try:
        with running_guard(home) as (_, log):
            threads = []
            for waiter in waiters:
                update = partial(waiter.execute, "UPDATE t SET v = 2 WHERE id = 1")
                threads.append(keep_trying(stop, update, results))
                time.sleep(2.5)
            record, asked = approve_and_heal(home, log, "pg_lock_wait", skill)
            results.clear()
            wait_for(lambda: results[-3:] == [True] * 3, 30, "the waiters to get the lock")
            stop.set()
            for thread in threads:
                thread.join(10)
    finally:
        stop.set()
        for conn in (blocker, *waiters):
            conn.close()
    evidence = record["details"]["evidence"]
    assert "queries=locks,connections" in evidence, evidence
    waits = re.findall(r"mode=(\w+), pid=(\d+), blocked_by=\{([\d,]*)\}", evidence)
    assert ("ShareLock", str(blocking)) in [(m, by) for m, _, by in waits], evidence
    assert "state=idle in transaction, user=app, app=guard-test, n=1" in evidence, evidence
    assert f"blocked_by={{{blocking}" in asked and "postgres.terminate" in asked, asked
    [(status,)] = db_rows(home, "select status from remediation_run")
    assert status == "verified"
    ended = " ".join(t["message"] for t in show(home, record["id"])["timeline"])
    assert "terminated 1 session(s)" in ended and str(blocking) in ended, ended
