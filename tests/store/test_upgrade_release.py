"""A database written by release dbf7ca5 (``tests/store/data/release-dbf7ca5.sql``, written by
``tests/store/make_release_db.py``) is upgraded in place: its per-channel tables move into the
channel tables with nothing lost, once, and a ``guard run`` on it then delivers what was still
pending exactly once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect
from sqlmodel import col, select

from guard.store.db import Database, open_database
from guard.store.models import (
    Approval,
    AuditEntry,
    ChannelMessage,
    HumanCommand,
    InboundUpdate,
    Incident,
    InFlight,
    MessageGroupMember,
    OutboxMessage,
    OutboxStatus,
)
from tests.fakes.telegram import TelegramServer
from tests.helpers.release_db import DATA, load, on_postgres, run_pending_once
from tests.helpers.telegram import CHAT

DUMP = DATA / "release-dbf7ca5.sql"
OLD = {f"telegram_{t}" for t in ("outbox", "message", "group_member", "in_flight", "update")}
PENDING = [
    "in flight when the release died",
    "still pending: the reply",
    "still pending: the report",
]


def release_db(path: Path) -> str:
    return load(DUMP, path)


def rows(db: Database, table: Any) -> list[Any]:
    with db.session() as s:
        return list(s.exec(select(table)).all())


def assert_everything_arrived(db: Database) -> None:
    outbox = sorted(rows(db, OutboxMessage), key=lambda r: r.id)
    assert [r.id for r in outbox] == list(range(1, 8))
    assert {r.channel for r in outbox} == {"telegram"}
    assert [r.status for r in outbox] == [OutboxStatus.sent] * 4 + [
        OutboxStatus.in_flight,
        OutboxStatus.pending,
        OutboxStatus.pending,
    ]
    assert outbox[0].buttons == [[["▶ Run web-fix", "a1"]], [["✖ Deny", "d1"]]]
    assert [r.text for r in outbox[4:]] == PENDING
    messages = sorted(rows(db, ChannelMessage), key=lambda m: m.id)
    assert [(m.channel, m.chat_id, m.message_id, m.role, m.live) for m in messages] == [
        ("telegram", str(CHAT), "1", "incident", False),
        ("telegram", str(CHAT), "2", "group", True),
    ]
    assert messages[0].approvals == ["a1", "d1"] and messages[1].approvals == ["d2", "d3"]
    members = rows(db, MessageGroupMember)
    assert sorted((m.channel, m.message_id, m.incident_id) for m in members) == [
        ("telegram", "2", 2),
        ("telegram", "2", 3),
    ]
    [flight] = rows(db, InFlight)
    assert (flight.channel, flight.outbox_ids, flight.floor) == ("telegram", [5], 2)
    updates = rows(db, InboundUpdate)
    assert sorted((u.channel, u.update_id) for u in updates) == [
        ("telegram", 500),
        ("telegram", 501),
    ]
    assert len(rows(db, Incident)) == 4 and len(rows(db, Approval)) == 4
    assert len(rows(db, HumanCommand)) == 1 and len(rows(db, AuditEntry)) == 1


def test_a_release_database_is_upgraded_in_place_once(tmp_path: Path) -> None:
    url = release_db(tmp_path / "guard.db")
    assert not Database(url).schema_current()  # the old tables still hold rows
    db = open_database(url, read_only=True)  # a read-only command upgrades it too
    assert_everything_arrived(db)
    assert not OLD & set(inspect(db.engine).get_table_names())
    assert db.schema_current()
    db.create_all()  # again: nothing moves twice
    assert_everything_arrived(db)
    with db.session() as s:  # new rows take ids after the moved ones
        s.add(OutboxMessage(channel="telegram", method="send", chat_id="1", text="new"))
    assert max(r.id for r in rows(db, OutboxMessage)) == 8


def test_guard_run_on_a_release_database_delivers_what_was_pending_once(
    tmp_path: Path, tg: TelegramServer
) -> None:
    db = run_pending_once(DUMP, tmp_path, tg, PENDING)
    with db.session() as s:  # each stored once, with the id Telegram gave it
        ids = s.exec(select(ChannelMessage.message_id).where(col(ChannelMessage.id) > 2)).all()
    assert len(ids) == len(set(ids)) and min(int(i) for i in ids) == 3


def test_a_release_database_on_postgres_is_upgraded_in_place(
    tmp_path: Path, postgres_url: str
) -> None:
    """The same tables and rows on PostgreSQL: moved with their ids, and the id sequences
    follow."""
    db = open_database(on_postgres(DUMP, tmp_path, postgres_url))
    assert_everything_arrived(db)
    assert db.schema_current()
    with db.session() as s:
        s.add(OutboxMessage(channel="telegram", method="send", chat_id="1", text="new"))
    assert max(r.id for r in rows(db, OutboxMessage)) == 8


pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")
