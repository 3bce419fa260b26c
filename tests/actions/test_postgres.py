"""postgres.terminate against a real PostgreSQL 15 in a container (the stack image): sessions
idle in a transaction, opened as a normal user and as a superuser; the normal user's old one is
terminated, its young one and the superuser's survive, and asking for the superuser's by pid is
refused."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from guard.actions.base import ActionContext, ActionError
from guard.actions.registry import ActionRegistry
from guard.config import Settings
from tests.flows.image import ensure_stack_image
from tests.flows.stack import PG_BIN

pytestmark = pytest.mark.docker

SECRET = "GUARD_TEST_FIXTURE_PG"  # refused: Guard's own namespace
START = (
    f"export PATH={PG_BIN}:$PATH; echo hunter2-su > /tmp/pw; "
    "initdb -D /tmp/pg -U postgres --pwfile=/tmp/pw --auth-local=trust "
    "--auth-host=scram-sha-256 >/dev/null && "
    "echo 'host all all 0.0.0.0/0 scram-sha-256' >> /tmp/pg/pg_hba.conf && "
    "exec postgres -D /tmp/pg -c listen_addresses='*' -c unix_socket_directories=/tmp -c fsync=off"
)
ROLES = (
    "CREATE ROLE app LOGIN PASSWORD 'app-pw'; "
    "CREATE ROLE guard LOGIN PASSWORD 'guard-pw-s3cret' IN ROLE pg_signal_backend, pg_read_all_stats"
)


@pytest.fixture(scope="module")
def pg(docker_client: Any) -> Iterator[str]:
    """The server's address as host:port, with roles app, guard (pg_signal_backend and
    pg_read_all_stats: it sees other roles' sessions' states) and the
        superuser postgres."""
    image = ensure_stack_image(docker_client)
    c = docker_client.containers.run(
        image,
        ["sh", "-c", START],
        name=f"guard-test-{os.getpid()}-pgterminate",
        user="postgres",
        detach=True,
        ports={"5432/tcp": ("127.0.0.1", None)},
        labels={"guard.test": "1"},
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            c.reload()
            port = (c.attrs["NetworkSettings"]["Ports"].get("5432/tcp") or [{}])[0].get("HostPort")
            try:
                with psycopg.connect(
                    f"postgresql://postgres:hunter2-su@127.0.0.1:{port}/postgres",
                    connect_timeout=2,
                    autocommit=True,
                ) as conn:
                    conn.execute(ROLES)
                break
            except (psycopg.Error, TypeError):
                if time.monotonic() > deadline:
                    raise AssertionError(c.logs().decode()[-2000:]) from None
                time.sleep(0.3)
        yield f"127.0.0.1:{port}"
    finally:
        c.remove(force=True)


def idle_in_transaction(address: str, user: str, password: str) -> psycopg.Connection[Any]:
    conn = psycopg.connect(f"postgresql://{user}:{password}@{address}/postgres")
    conn.execute("SELECT 1")  # psycopg opened a transaction: the session is idle in it
    return conn


def alive(conn: psycopg.Connection[Any]) -> bool:
    try:
        conn.execute("SELECT 1")
        return True
    except psycopg.OperationalError:
        return False


async def test_terminate_ends_old_idle_transactions_but_never_a_superusers(pg, monkeypatch):
    monkeypatch.setenv("PG_GUARD_URL", f"postgresql://guard:guard-pw-s3cret@{pg}/postgres")
    old = idle_in_transaction(pg, "app", "app-pw")
    su = idle_in_transaction(pg, "postgres", "hunter2-su")
    await asyncio.sleep(2.5)
    young = idle_in_transaction(pg, "app", "app-pw")
    action = ActionRegistry().get("postgres.terminate")
    ctx = ActionContext(Settings())
    try:
        with pytest.raises(ActionError, match=r"refuses session .* superuser postgres"):
            await action.run({"secret": "PG_GUARD_URL", "pid": su.info.backend_pid}, ctx)
        done = await action.run(
            {"secret": "PG_GUARD_URL", "state": "idle in transaction", "older_than": "2s"}, ctx
        )
        assert done.ok, done.message
        assert [d["pid"] for d in done.details["terminated"]] == [old.info.backend_pid]
        assert done.details["spared_superuser"] == [su.info.backend_pid]
        assert "terminated 1 session(s)" in done.message and "spared 1 superuser" in done.message
        assert "guard-pw-s3cret" not in done.message
        assert not alive(old) and alive(su) and alive(young)
    finally:
        for conn in (old, su, young):
            with contextlib.suppress(Exception):
                conn.close()


async def test_terminate_refuses_a_missing_or_guards_own_secret(pg, monkeypatch):
    action = ActionRegistry().get("postgres.terminate")
    ctx = ActionContext(Settings())
    monkeypatch.delenv("PG_NOT_SET", raising=False)
    with pytest.raises(ActionError, match="secret PG_NOT_SET is not set"):
        await action.run({"secret": "PG_NOT_SET"}, ctx)
    with pytest.raises(ActionError, match="Guard's own configuration"):
        await action.run({"secret": SECRET}, ctx)
    with pytest.raises(ActionError, match="state must be one of"):
        monkeypatch.setenv("PG_GUARD_URL", f"postgresql://guard:wrong@{pg}/postgres")
        await action.run({"secret": "PG_GUARD_URL", "state": "asleep"}, ctx)
    with pytest.raises(ActionError, match=r"via secret PG_GUARD_URL: .*password") as refused:
        await action.run({"secret": "PG_GUARD_URL"}, ctx)
    assert "wrong" not in str(refused.value)
