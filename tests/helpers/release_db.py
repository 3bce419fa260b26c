"""Databases that older releases wrote (SQL dumps in ``tests/store/data/``), loaded into SQLite
or copied onto a real PostgreSQL, and opened by a real ``guard run``, for the upgrade tests."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy import DateTime, Integer, LargeBinary, MetaData, text
from sqlalchemy import create_engine as sa_engine
from sqlmodel import select

from guard.store.db import Database, open_database
from guard.store.models import OutboxMessage, OutboxStatus
from tests.conftest import GuardHome
from tests.fakes.postgres import fresh_database
from tests.fakes.telegram import TelegramServer
from tests.helpers.agent import running_guard, wait_for
from tests.helpers.telegram import CHAT, configure
from tests.telegram.test_telegram_limits import call

DATA = Path(__file__).parent.parent / "store" / "data"


def load(dump: Path, path: Path) -> str:
    """The SQLite database ``path`` made from ``dump``, as a URL."""
    conn = sqlite3.connect(path)
    conn.executescript(dump.read_text())
    conn.close()
    return f"sqlite:///{path}"


def on_postgres(dump: Path, tmp: Path, postgres_url: str) -> str:
    """The same tables and rows on a fresh PostgreSQL database (copied from the dump's SQLite
    file with their reflected types), as a URL."""
    source = sa_engine(load(dump, tmp / "source.db"))
    target = sa_engine(fresh_database(postgres_url))
    old = MetaData()
    old.reflect(source)
    for table in old.sorted_tables:  # SQLite's names for what Postgres calls otherwise
        for column in table.columns:
            if isinstance(column.type, DateTime):
                column.type = DateTime(timezone=True)
            elif isinstance(column.type, LargeBinary):
                column.type = LargeBinary()
    old.create_all(target)
    with source.connect() as src, target.begin() as dst:
        for table in old.sorted_tables:
            found = [dict(r._mapping) for r in src.execute(table.select())]
            if found:
                dst.execute(table.insert(), found)
            if "id" in table.columns and isinstance(
                table.c.id.type, Integer
            ):  # as the release's own inserts would have left it
                dst.execute(
                    text(
                        f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), "
                        f'COALESCE((SELECT MAX(id) FROM "{table.name}"), 0) + 1, false) '
                        f"WHERE pg_get_serial_sequence('{table.name}', 'id') IS NOT NULL"
                    )
                )
    source.dispose()
    url = str(target.url.render_as_string(hide_password=False))
    target.dispose()
    return url


def run_pending_once(dump: Path, tmp: Path, tg: TelegramServer, pending: list[str]) -> Database:
    """A ``guard run`` on the release's database (its Telegram chat had two messages, ids 1
    and 2): every text of ``pending`` is posted exactly once, nothing at all twice, and the
    outbox settles. Returns the database, upgraded."""
    for said in ("before the upgrade 1", "before the upgrade 2"):
        call(tg, "sendMessage", chat_id=CHAT, text=said)
    home = GuardHome(tmp)
    url = load(dump, tmp / "release.db")
    configure(home, tg, database_url=url)
    with running_guard(home):
        wait_for(lambda: all(tg.bot_messages(p) for p in pending), 60, "the pending posts")
        db = open_database(url)

        def settled() -> bool:
            with db.session() as s:
                return all(r.status == OutboxStatus.sent for r in s.exec(select(OutboxMessage)))

        wait_for(settled, 30, "the outbox to settle")
    for one in pending:
        posted = [c for c in tg.sent("sendMessage") if c["params"].get("text") == one]
        assert len(posted) == 1, (one, posted)
    texts = [c["params"].get("text") for c in tg.sent("sendMessage")]
    assert len(texts) == len(set(texts)), texts  # nothing at all posted twice
    return db
