"""A database written by release 9171acc, whose message ids were integers
(``tests/store/data/release-9171acc.sql``, written by ``tests/store/make_main_db.py``), opens
under the current code with every message id a string, none lost, once, on SQLite and on
PostgreSQL; ids such as Slack's (``1733472000.123456``) and Matrix's (``$event:server``) are
then kept exactly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import String, inspect
from sqlmodel import select

from guard.store.db import Database, open_database
from guard.store.models import (
    ChannelMessage,
    InboundUpdate,
    InFlight,
    MessageGroupMember,
    OutboxMessage,
    OutboxStatus,
)
from tests.fakes.telegram import TelegramServer
from tests.helpers.release_db import DATA, load, on_postgres, run_pending_once
from tests.helpers.telegram import CHAT
from tests.store.make_release_db import IN_FLIGHT_TEXT, PENDING_TEXTS

DUMP = DATA / "release-9171acc.sql"
TABLES = ("channel_message", "message_group_member", "inbound_update")
PENDING = [IN_FLIGHT_TEXT, *PENDING_TEXTS]
FOREIGN = ["1733472000.123456", "1733472000.000010", "$Rk3x:example.org"]


def rows(db: Database, table: Any) -> list[Any]:
    with db.session() as s:
        return list(s.exec(select(table)).all())


def assert_ids_are_strings(db: Database) -> None:
    found = inspect(db.engine)
    for table in TABLES:
        [column] = [c for c in found.get_columns(table) if c["name"] == "message_id"]
        assert isinstance(column["type"], String), (table, column["type"])
    messages = sorted(rows(db, ChannelMessage), key=lambda m: m.id)
    assert [(m.chat_id, m.message_id, m.role, m.live) for m in messages] == [
        (str(CHAT), "1", "incident", False),
        (str(CHAT), "2", "group", True),
    ]
    assert messages[0].approvals == ["a1", "d1"]
    members = sorted(rows(db, MessageGroupMember), key=lambda m: m.incident_id)
    assert [(m.message_id, m.incident_id, m.live) for m in members] == [
        ("2", 2, True),
        ("2", 3, True),
    ]
    updates = sorted(rows(db, InboundUpdate), key=lambda u: u.update_id)
    assert [(u.update_id, u.message_id) for u in updates] == [(500, "1"), (501, None)]
    [flight] = rows(db, InFlight)
    assert (flight.outbox_ids, flight.floor) == ([5], 2)
    outbox = sorted(rows(db, OutboxMessage), key=lambda r: r.id)
    assert [r.status for r in outbox] == [OutboxStatus.sent] * 4 + [
        OutboxStatus.in_flight,
        OutboxStatus.pending,
        OutboxStatus.pending,
    ]


def assert_foreign_ids_kept(db: Database) -> None:
    with db.session() as s:
        for n, message_id in enumerate(FOREIGN):
            s.add(ChannelMessage(channel="other", chat_id="C1", message_id=message_id))
            s.add(
                MessageGroupMember(
                    channel="other", chat_id="C1", message_id=message_id, incident_id=n
                )
            )
            s.add(InboundUpdate(channel="other", update_id=n, chat_id="C1", message_id=message_id))
    for table in (ChannelMessage, MessageGroupMember, InboundUpdate):
        kept = [r.message_id for r in rows(db, table) if r.channel == "other"]
        assert sorted(kept) == sorted(FOREIGN), table


@pytest.mark.unit
def test_a_9171acc_database_opens_with_string_message_ids(tmp_path: Path) -> None:
    url = load(DUMP, tmp_path / "guard.db")
    assert not Database(url).schema_current()  # integer columns wait to become strings
    db = open_database(url, read_only=True)  # a read-only command upgrades it too
    assert_ids_are_strings(db)
    assert db.schema_current()
    db.create_all()  # again: nothing changes twice
    assert_ids_are_strings(db)
    assert_foreign_ids_kept(db)


def test_a_9171acc_database_on_postgres_opens_with_string_message_ids(
    tmp_path: Path, postgres_url: str
) -> None:
    url = on_postgres(DUMP, tmp_path, postgres_url)
    assert not Database(url).schema_current()
    db = open_database(url)
    assert_ids_are_strings(db)
    assert db.schema_current()
    assert_foreign_ids_kept(db)


def test_guard_run_on_a_9171acc_volume_posts_its_rows_in_flight_once(
    tmp_path: Path, tg: TelegramServer
) -> None:
    """Telegram rows in flight and pending, message ids recorded as integers, group members:
    posted once each under the current code, the replies quoting the old incident message
    (stored ``1``, now ``"1"``), every id Telegram gave stored as its string."""
    db = run_pending_once(DUMP, tmp_path, tg, PENDING)
    for text in PENDING[1:]:  # the replies to incident 1, whose message was stored as 1
        [posted] = tg.bot_messages(text)
        assert posted["reply_to_message"]["message_id"] == 1, posted
    with db.session() as s:
        stored = {m.message_id: m.role for m in s.exec(select(ChannelMessage))}
        members = [m.message_id for m in s.exec(select(MessageGroupMember))]
        flights = s.exec(select(InFlight)).all()
    new = {str(m["message_id"]) for m in tg.bot_messages(PENDING[0][:8])} | {
        str(m["message_id"]) for m in tg.bot_messages("still pending")
    }
    assert {"1": "incident", "2": "group"}.items() <= stored.items()  # the old ones, kept
    assert set(stored) == {"1", "2"} | new and len(new) == 3  # each new one, its string
    assert members == ["2", "2"] and not flights


pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")
