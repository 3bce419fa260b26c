"""Message ids are strings: Slack's are ``1733472000.123456``, Matrix's ``$event:server``.
Releases up to 9171acc stored them as integers (the Bot API's); such a database is converted in
place, once.

``pending`` names the tables whose ``message_id`` column is not a string yet; ``convert`` turns
each into one, every id kept as its decimal text (``42`` -> ``"42"``). PostgreSQL alters the
column's type; SQLite cannot, so the table is rebuilt (renamed, made again with its indexes,
its rows copied, the old one dropped). All in one transaction: a crash leaves the integer
columns whole or the string ones. ``Database.create_all`` calls it under the schema lock.

Tested by ``tests/store/test_stringids.py``.
"""

from __future__ import annotations

from typing import Any

from loguru import logger
from sqlalchemy import String, inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlmodel import SQLModel

TABLES = ("channel_message", "message_group_member", "inbound_update")
COLUMN = "message_id"


def pending(found: Any) -> list[str]:
    """The tables (of ``found``, an inspector) whose message ids are not strings yet."""
    names = set(found.get_table_names())
    return [
        table
        for table in TABLES
        if table in names
        and any(
            c["name"] == COLUMN and not isinstance(c["type"], String)
            for c in found.get_columns(table)
        )
    ]


def convert(engine: Engine) -> list[str]:
    """Make every integer ``message_id`` column a string one; return the tables converted."""
    with engine.begin() as conn:
        todo = pending(inspect(conn))
        for table in todo:
            if conn.dialect.name == "postgresql":
                conn.execute(
                    text(
                        f'ALTER TABLE "{table}" ALTER COLUMN "{COLUMN}" TYPE VARCHAR '
                        f'USING "{COLUMN}"::text'
                    )
                )
            else:
                _rebuild(conn, table)
    if todo:
        logger.info("message ids are strings now in {}", ", ".join(todo))
    return todo


def _rebuild(conn: Connection, table: str) -> None:
    """SQLite's way to change a column's type: the table made again, its rows copied."""
    found = inspect(conn)
    columns = [c["name"] for c in found.get_columns(table)]
    indexes = [i["name"] for i in found.get_indexes(table) if i["name"]]
    old = f"{table}__integer_ids"
    conn.execute(text(f'ALTER TABLE "{table}" RENAME TO "{old}"'))
    for index in indexes:  # they moved with the table; the new one makes them again
        conn.execute(text(f'DROP INDEX "{index}"'))
    SQLModel.metadata.tables[table].create(conn)
    names = ", ".join(f'"{c}"' for c in columns)
    values = ", ".join(f'CAST("{c}" AS TEXT)' if c == COLUMN else f'"{c}"' for c in columns)
    conn.execute(text(f'INSERT INTO "{table}" ({names}) SELECT {values} FROM "{old}"'))
    conn.execute(text(f'DROP TABLE "{old}"'))
