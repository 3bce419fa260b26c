"""The unauthenticated endpoint stays cheap and discreet: a flood of ``/healthz`` is one database
write per interval (counted at the engine, not timed), and ``/readyz`` tells a client that is
not on loopback only the status and the role."""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC
from typing import Any

import pytest
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from sqlalchemy import event
from sqlalchemy.orm import Session

from guard.app import Guard
from guard.store.state import get_state
from guard.web.server import WebServer
from tests.conftest import GuardHome


@dataclass
class Served:
    web: WebServer
    guard: Guard
    now: list[float]  # the probe's clock, moved by hand


@pytest.fixture
async def served(home: GuardHome) -> AsyncIterator[Served]:
    home.write_config({"http_host": "0.0.0.0", "http_port": 0})
    guard = Guard(home.settings(), home.playbooks_loaded())
    scheduler = AsyncIOScheduler(timezone=UTC)
    scheduler.start()
    now = [1000.0]
    web = WebServer(guard, scheduler, probe_every=5.0, clock=lambda: now[0])
    await web.start()
    try:
        yield Served(web, guard, now)
    finally:
        await web.close()
        scheduler.shutdown(wait=False)
        await guard.close()


async def get(host: str, port: int, path: str) -> tuple[int, dict[str, Any]]:
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: guard\r\n\r\n".encode())
    await writer.drain()
    raw = await reader.read()
    writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def healthz_writes(served: Served) -> list[str]:
    """Every statement that writes the ``guard:healthz`` row, as the engine runs it."""
    seen: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith(("INSERT", "UPDATE")) and "guard:healthz" in str(
            params
        ):
            seen.append(statement)

    event.listen(served.guard.db.engine, "before_cursor_execute", count)
    return seen


async def flood(served: Served, n: int = 1000, at_once: int = 100) -> list[int]:
    statuses: list[int] = []
    for _ in range(n // at_once):
        answers = await asyncio.gather(
            *(get("127.0.0.1", served.web.port, "/healthz") for _ in range(at_once))
        )
        statuses += [status for status, _ in answers]
    return statuses


@pytest.mark.unit
async def test_a_thousand_healthz_requests_write_once_per_interval(served: Served) -> None:
    writes = healthz_writes(served)
    await served.web._beat()  # the heartbeat job's first tick
    assert await flood(served) == [200] * 1000
    assert len(writes) == 1  # the first request wrote; 999 read its result
    served.now[0] += 4.9
    status, body = await get("127.0.0.1", served.web.port, "/healthz")
    assert status == 200 and body["database"]["writable"] is True
    assert body["database"]["age_seconds"] == pytest.approx(4.9)
    assert len(writes) == 1
    served.now[0] += 0.1  # the interval is over: the next request writes again, once
    assert await flood(served) == [200] * 1000
    assert len(writes) == 2
    with served.guard.db.session() as s:  # the write is real: the row is there
        assert "at" in get_state(s, "guard:healthz")


def own_address() -> str:
    """This machine's address on its default route (not loopback)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))  # no packet is sent; it picks the outgoing interface
        return str(s.getsockname()[0])


@pytest.mark.unit
async def test_readyz_shows_replica_and_token_only_on_loopback(served: Served) -> None:
    status, local = await get("127.0.0.1", served.web.port, "/readyz")
    assert status == 200
    details = {"replica", "fencing_token", "monitors", "unscheduled", "capabilities"}
    assert set(local) == {"status", "role", *details}  # what works here: loopback only too
    assert local["replica"] == served.guard.leadership.replica.id
    address = own_address()
    assert not address.startswith("127.")
    status, remote = await get(address, served.web.port, "/readyz")
    assert status == 200
    assert remote == {"status": "ready", "role": "leader"}


async def test_a_hung_write_is_not_started_again(served: Served, home: GuardHome) -> None:
    begun: list[int] = []  # transactions the probe starts (each then blocks on the lock below)

    def started(_session: Any, transaction: Any) -> None:
        if transaction.parent is None:
            begun.append(1)

    event.listen(Session, "after_transaction_create", started)
    locker = sqlite3.connect(home.root / "data" / "guard.db", timeout=1, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")  # another writer holds the database for a long while
    try:
        status, body = await get("127.0.0.1", served.web.port, "/healthz")  # waits DB_TIMEOUT
        assert status == 503 and body["database"]["error"] == "timed out"
        assert len(begun) == 1
        served.now[0] += 60  # many intervals later, the first write is still stuck
        status, body = await get("127.0.0.1", served.web.port, "/healthz")
        assert status == 503
        assert body["database"]["error"] == "timed out (the last write has not returned)"
        assert len(begun) == 1  # no second thread piled up behind the first
    finally:
        locker.execute("ROLLBACK")
        locker.close()
        event.remove(Session, "after_transaction_create", started)
