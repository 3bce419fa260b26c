"""Databases that older releases wrote (SQL dumps in ``tests/store/data/``), loaded into SQLite
or copied onto a real PostgreSQL, for the upgrade tests."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy import DateTime, Integer, LargeBinary, MetaData, text
from sqlalchemy import create_engine as sa_engine

from tests.fakes.postgres import fresh_database

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
