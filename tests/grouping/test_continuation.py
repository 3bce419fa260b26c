"""A line that carries a client's text (PostgreSQL's ``STATEMENT:``) is grouped with the line it
continues (guard/grouping/continuation.py), not with other statements alike in words."""

from __future__ import annotations

import re

import pytest

from guard.grouping.rules import rule_groupers
from guard.grouping.templates import TemplateBook
from guard.store.db import open_database

pytestmark = pytest.mark.unit

PG = "2026-12-06 16:45:38.{ms:03d} UTC [{pid}] {level}:  {message}"


def _templates(log_format: str, lines: list[str]) -> list[int]:
    """The template id of each line, as triage assigns it (a catch-all rule)."""
    grouper = rule_groupers([(None, re.compile("."))], default="template", log_format=log_format)[0]
    db = open_database("sqlite://")
    book = TemplateBook()
    with db.session() as session:
        ids = [book.assign(session, grouper.group("log", line)[1].content)[0] for line in lines]
    db.dispose()
    return ids


def _pg(pid: int, level: str, message: str, ms: int = 0) -> str:
    return PG.format(ms=ms, pid=pid, level=level, message=message)


def _fields(text: str) -> list[list[str]]:
    return [row.strip().split(" ", 2) for row in text.splitlines()]


@pytest.mark.parametrize("log_format", ["postgres", "auto"])
def test_a_statement_is_grouped_with_the_error_it_follows(log_format: str) -> None:
    """Two faults whose statements differ in one word of nine (``items`` / ``stock``) are two
    templates; a statement of the same fault, other values, is the same one."""
    lines = [
        _pg(11, "ERROR", 'new row for relation "items" violates check constraint "qty_ok"'),
        _pg(11, "DETAIL", "Failing row contains (17, n17, -28, null)."),
        _pg(11, "STATEMENT", "UPDATE items SET qty = -28 WHERE id = 17"),
        _pg(12, "ERROR", 'null value in column "qty" of relation "stock" violates not-null'),
        _pg(12, "STATEMENT", "UPDATE stock SET qty = 81 WHERE id = 3"),
        _pg(13, "ERROR", 'new row for relation "items" violates check constraint "qty_ok"'),
        _pg(13, "DETAIL", "Failing row contains (4, n4, -3, null)."),
        _pg(13, "STATEMENT", "UPDATE items SET qty = -3 WHERE id = 4"),
    ] * 4
    ids = _templates(log_format, lines)
    check, not_null = ids[2], ids[4]
    assert check != not_null
    assert ids[7] == check and ids[-1] == check and ids[-4] == not_null
    assert ids[1] == ids[6]  # a DETAIL is PostgreSQL's own message: mined as usual


def test_a_statement_follows_the_error_of_its_own_backend() -> None:
    """Backends interleave: the pid in the prefix says which error a statement continues."""
    interleaved = """21 ERROR division by zero
        22 ERROR deadlock detected
        21 STATEMENT SELECT qty / 0 FROM items WHERE id = 3
        22 STATEMENT SELECT qty / 1 FROM stock WHERE id = 3
        23 ERROR division by zero
        23 STATEMENT SELECT qty / 0 FROM items WHERE id = 9"""
    lines = [_pg(int(pid), level, message) for pid, level, message in _fields(interleaved)]
    ids = _templates("postgres", lines)
    assert ids[2] == ids[5] and ids[2] != ids[3]


def test_a_pattern_of_the_users_may_name_continues_alone() -> None:
    """``format:`` a pattern naming ``continues`` (no writer, no aside): one writer."""
    pattern = r"^\S+ (?:(?P<continues>SQL)|[A-Z]+): (?P<message>.*)$"
    lines = [
        "t1 ERROR: division by zero",
        "t2 SQL: SELECT qty / 0 FROM items WHERE id = 3",
        "t3 ERROR: deadlock detected",
        "t4 SQL: SELECT qty / 1 FROM stock WHERE id = 3",
        "t5 ERROR: division by zero",
        "t6 SQL: SELECT qty / 0 FROM items WHERE id = 9",
    ]
    ids = _templates(pattern, lines)
    assert ids[1] == ids[5] and ids[1] != ids[3]
