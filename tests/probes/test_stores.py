"""probe.postgres and probe.redis against real daemons (the stack image, built offline), each
on a published loopback port: PostgreSQL with every ordinary slot taken (the probe's superuser
gets a reserved one and shows who holds them, by state), Redis filled to its ``maxmemory``."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.flows.image import ensure_stack_image
from tests.flows.stack import PG_BIN
from tests.helpers.agent import free_port, wait_for
from tests.helpers.probes import probe, probe_settings

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]  # the stack image: built once

PASSWORD = "pr0be-Pass-9f3Kq"  # in the probe's secret; never in its result
MAX_CONNECTIONS = 8  # 3 of them reserved for superusers (PostgreSQL's default)
PG_START = (
    f"export PATH={PG_BIN}:$PATH; initdb -D /tmp/pg -U postgres --auth=trust >/dev/null && "
    "echo 'host all all 0.0.0.0/0 trust' >> /tmp/pg/pg_hba.conf && "
    f"exec postgres -D /tmp/pg -c listen_addresses='*' -c max_connections={MAX_CONNECTIONS} "
    "-c unix_socket_directories=/tmp -c fsync=off"
)
PREFIX = f"guard-probes-{os.getpid()}-{time.time_ns() % 10**6}"


@contextlib.contextmanager
def daemon(client: Any, name: str, cmd: list[str], port: int, **kwargs: Any) -> Iterator[int]:
    """A stack-image container ``name`` with ``port`` published on a free loopback port."""
    image = ensure_stack_image(client)
    host_port = free_port()
    container = client.containers.run(
        image,
        cmd,
        name=f"{PREFIX}-{name}",
        detach=True,
        ports={f"{port}/tcp": ("127.0.0.1", host_port)},
        **{**kwargs, "labels": {"guard.test": "probes", **kwargs.get("labels", {})}},
    )
    try:
        yield host_port
    finally:
        container.remove(force=True)


def _connect(port: int, user: str, app: str = "guard-test") -> psycopg.Connection[Any]:
    return psycopg.connect(
        host="127.0.0.1", port=port, user=user, dbname="postgres", application_name=app
    )


@pytest.fixture(scope="module")
def pg(docker_client: Any) -> Iterator[int]:
    with daemon(docker_client, "pg", ["sh", "-c", PG_START], 5432, user="postgres") as port:

        def ready() -> bool:
            try:
                _connect(port, "postgres").close()
            except psycopg.OperationalError:
                return False
            return True

        wait_for(ready, 60, "PostgreSQL to accept connections")
        with _connect(port, "postgres") as admin:
            admin.autocommit = True
            admin.execute("CREATE ROLE app LOGIN")
        yield port


async def test_postgres_at_max_connections_shows_them_by_state(
    pg: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held: list[psycopg.Connection[Any]] = []
    try:
        held += [_connect(pg, "app"), _connect(pg, "app", app=f"cron {PASSWORD}")]  # idle
        for _ in range(2):  # idle in transaction
            conn = _connect(pg, "app")
            conn.execute("SELECT 1")
            held.append(conn)
        busy = _connect(pg, "app")
        busy.execute("SELECT 1")
        busy.commit()
        held.append(busy)
        with pytest.raises(psycopg.OperationalError, match="reserved"):
            _connect(pg, "app")  # every ordinary slot is taken: the app is out of connections
        monkeypatch.setenv(
            "PG_PROBE_URL", f"postgresql://postgres:{PASSWORD}@127.0.0.1:{pg}/postgres"
        )
        settings = probe_settings(
            tmp_path, allow=[{"host": "127.0.0.1", "ports": [pg]}], secrets=["PG_PROBE_URL"]
        )
        found = await probe("probe.postgres PG_PROBE_URL", settings)
    finally:
        for conn in held:
            conn.close()
    text = found.message
    assert found.ok, text
    assert f"connections (6 of max_connections {MAX_CONNECTIONS}, 3 reserved):" in text, text
    assert "state=idle in transaction, user=app, app=guard-test, n=2" in text, text
    assert "state=idle, user=app, app=guard-test, n=2" in text, text
    assert "app=cron [REDACTED:PG_PROBE_URL], n=1" in text, text
    assert PASSWORD not in text and PASSWORD not in str(found.details)
    assert "locks:\n  (none)" in text and "replication:\n  (none)" in text
    assert "sizes:\n  database=postgres, size=" in text
    assert found.details["used"] == 6 and found.details["max_connections"] == MAX_CONNECTIONS
    assert len(text) <= settings.probes.output_limit


async def test_postgres_refusals_are_clear_results(
    pg: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PG_PROBE_URL", f"postgresql://nobody:{PASSWORD}@127.0.0.1:{pg}/postgres")
    settings = probe_settings(
        tmp_path, allow=[{"host": "127.0.0.1", "ports": [pg]}], secrets=["PG_PROBE_URL"]
    )
    found = await probe("probe.postgres PG_PROBE_URL queries=sizes", settings)
    assert not found.ok and 'role "nobody" does not exist' in found.message, found.message
    assert PASSWORD not in found.message


REDIS_MAX = 4 * 1024 * 1024
FILL = (  # Lua writes on past maxmemory once a script runs: this one stops itself at 95%
    "local i = 0 while i < 1000 do "
    "local used = tonumber(string.match(redis.call('info', 'memory'), 'used_memory:(%d+)')) "
    "if used >= 0.95 * tonumber(ARGV[1]) then return i end "
    "i = i + 1 redis.call('set', 'k' .. i, string.rep('x', 20000)) end return i"
)


async def test_redis_near_maxmemory(
    docker_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cmd = [
        "redis-server", "--protected-mode", "no", "--save", "", "--requirepass", PASSWORD,
        "--maxmemory", str(REDIS_MAX), "--maxmemory-policy", "noeviction",
    ]  # fmt: skip
    with daemon(docker_client, "redis", cmd, 6379) as port:
        container = docker_client.containers.get(f"{PREFIX}-redis")
        wait_for(
            lambda: b"PONG" in container.exec_run(["redis-cli", "-a", PASSWORD, "ping"]).output,
            30,
            "Redis to answer",
        )
        container.exec_run(["redis-cli", "-a", PASSWORD, "eval", FILL, "0", str(REDIS_MAX)])
        monkeypatch.setenv("REDIS_PROBE_URL", f"redis://:{PASSWORD}@127.0.0.1:{port}/0")
        settings = probe_settings(
            tmp_path, allow=[{"host": "127.0.0.1", "ports": [port]}], secrets=["REDIS_PROBE_URL"]
        )
        found = await probe("probe.redis secret=REDIS_PROBE_URL", settings)
        clients = await probe("probe.redis secret=REDIS_PROBE_URL section=clients", settings)
        monkeypatch.setenv("REDIS_PROBE_URL", f"redis://:wrong-{PASSWORD}@127.0.0.1:{port}/0")
        wrong = await probe("probe.redis secret=REDIS_PROBE_URL", settings)
    assert not found.ok, found.message  # at 90% of maxmemory or more: not healthy
    assert "of maxmemory 4.00M (" in found.message and "policy noeviction" in found.message
    assert 0.9 * REDIS_MAX <= int(found.details["info"]["used_memory"]) <= 1.1 * REDIS_MAX
    assert clients.ok and "connected_clients:" in clients.message
    assert not wrong.ok and "invalid username-password pair" in wrong.message, wrong.message
    for text in (found.message, clients.message, str(found.details), wrong.message):
        assert PASSWORD not in text
