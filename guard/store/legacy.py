"""Per-channel tables of older releases, moved into the tables named for the concept, once.

Releases up to dbf7ca5 knew one channel and kept its delivery state in tables named after it:
``<channel>_outbox``, ``<channel>_message``, ``<channel>_group_member``, ``<channel>_in_flight``
and ``<channel>_update``. A ``<channel>_outbox`` table that no current model owns marks such a
set. ``move`` copies each of its tables' rows, ids included (an in-flight record names outbox
ids), into ``outbox``, ``channel_message``, ``message_group_member``, ``in_flight`` and
``inbound_update`` with ``channel`` set to the prefix, then drops the old tables: all in one
transaction, so a crash leaves either the old tables whole or the new rows whole, and a second
run finds nothing to move. ``Database.create_all`` calls it under the schema lock.
"""

from __future__ import annotations

import re

from loguru import logger
from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlmodel import SQLModel

# old table suffix -> the table its rows move to
MOVES = {
    "outbox": "outbox",
    "message": "channel_message",
    "group_member": "message_group_member",
    "in_flight": "in_flight",
    "update": "inbound_update",
}
_NAME = re.compile(r"^([a-z][a-z0-9]*)_outbox$")


def pending(names: set[str] | list[str]) -> dict[str, list[tuple[str, str]]]:
    """Per channel of an older release, its ``(old table, new table)`` pairs still to move."""
    current = set(SQLModel.metadata.tables)
    found = set(names) - current
    out: dict[str, list[tuple[str, str]]] = {}
    for name in sorted(found):
        match = _NAME.match(name)
        if match is None:
            continue
        channel = match.group(1)
        out[channel] = [
            (f"{channel}_{suffix}", new)
            for suffix, new in MOVES.items()
            if f"{channel}_{suffix}" in found
        ]
    return out


def move(engine: Engine) -> int:
    """Move every older release's per-channel rows; return how many rows moved."""
    with engine.begin() as conn:
        todo = pending(inspect(conn).get_table_names())
        moved = sum(
            _move(conn, channel, old, new) for channel, pairs in todo.items() for old, new in pairs
        )
        for pairs in todo.values():
            for old, _ in pairs:
                conn.execute(text(f'DROP TABLE "{old}"'))
    if todo:
        logger.info("moved {} rows of {} into the channel tables", moved, ", ".join(todo))
    return moved


def _move(conn: Connection, channel: str, old: str, new: str) -> int:
    found = inspect(conn)
    old_cols = [c["name"] for c in found.get_columns(old)]
    new_cols = {c["name"] for c in found.get_columns(new)}
    cols = [c for c in old_cols if c in new_cols and c != "channel"]
    names = ", ".join(f'"{c}"' for c in cols)
    result = conn.execute(
        text(f'INSERT INTO "{new}" ("channel", {names}) SELECT :channel, {names} FROM "{old}"'),
        {"channel": channel},
    )
    if conn.dialect.name == "postgresql" and "id" in cols:  # ids were copied: move the sequence
        conn.execute(
            text(
                f"SELECT setval(pg_get_serial_sequence('{new}', 'id'), "
                f'COALESCE((SELECT MAX(id) FROM "{new}"), 0) + 1, false)'
            )
        )
    return int(getattr(result, "rowcount", 0) or 0)
