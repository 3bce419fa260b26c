"""``guard incidents list``'s query on the DB-API, without SQLAlchemy (issue 17).

The ORM path costs ~0.4 s of imports and a ``create_all`` before a 5 ms query; this module runs
the same query with ``sqlite3`` (read-only, ``mode=ro``) or ``psycopg`` and turns each row into
the values the ORM's column types would have made: datetimes parsed and made UTC-aware like
``UTCDateTime``, JSON decoded, booleans as ``bool``, the state as ``IncidentState``.

It answers only for a store the ORM path would read as it is, and returns None otherwise, for
the caller to take that path: an unknown URL scheme or driver, a store that is not there yet
(the ORM creates it), a schema that does not match (a table or column missing), a store whose
rows have not been scrubbed under the current rules yet (the ORM's ``scrub.migrate`` would do
it first), a value the ORM would refuse (an unknown state), or any database error.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from guard.domain.records import IncidentState

RULESET = 1  # guard.store.scrub.RULESET (a test keeps them equal)
SCRUB_MARK = "guard:redaction"  # guard.store.scrub._MARK
COLUMNS = (
    "id, state, source, target, kind, severity, count, fingerprint, title, message, monitor_id, "
    "opened_at, first_seen, last_seen, resolved_at, flapping, reopen_count, details"
)


class NotHere(Exception):
    """The fast path cannot answer; the ORM path will."""


@dataclass(frozen=True)
class IncidentRow:
    """An ``Incident`` as the ORM loads it, for ``guard incidents list``."""

    id: int
    state: IncidentState
    source: str
    target: str
    kind: str
    severity: str
    count: int
    fingerprint: str
    title: str
    message: str
    monitor_id: str
    opened_at: datetime
    first_seen: datetime
    last_seen: datetime
    resolved_at: datetime | None
    flapping: bool
    reopen_count: int
    details: Any


@dataclass(frozen=True)
class Listing:
    rows: list[IncidentRow]
    templates: dict[int, str]


def list_incidents(
    url: str,
    states: Sequence[str],
    limit: int,
    template_ids: Callable[[Sequence[IncidentRow]], list[int]],
) -> Listing | None:
    """The ``limit`` newest incidents (in ``states``, if any) and their templates' text, or None.

    ``template_ids`` picks the template ids to look up from the rows (the CLI's own rule).
    """
    try:
        if url.startswith("sqlite:///"):
            return _sqlite(url, states, limit, template_ids)
        if url.startswith("postgresql+psycopg://"):
            return _postgres(url, states, limit, template_ids)
    except NotHere:
        return None
    return None


def _sqlite_path(url: str) -> str:
    path = url.removeprefix("sqlite:///")
    if not path or path == ":memory:" or any(c in path for c in "?#%"):
        raise NotHere("not a plain SQLite file path")
    return path


def _sqlite(
    url: str,
    states: Sequence[str],
    limit: int,
    template_ids: Callable[[Sequence[IncidentRow]], list[int]],
) -> Listing:
    import sqlite3

    uri = f"file:{quote(_sqlite_path(url))}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=10, isolation_level=None)
    except sqlite3.Error:
        raise NotHere("no store yet") from None
    try:
        conn.execute("BEGIN")  # one snapshot for the three reads
        return _read(conn.cursor(), "?", states, limit, template_ids, _sqlite_datetime)
    except sqlite3.Error as exc:
        raise NotHere(str(exc)) from None
    finally:
        conn.close()


def _postgres_args(url: str) -> dict[str, Any]:
    """``psycopg.connect`` keywords for the URL, as SQLAlchemy's psycopg dialect makes them."""
    parts = urlsplit(url)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    if hostport.startswith("[") or "," in hostport or parts.fragment:
        raise NotHere("IPv6 literal or several hosts")
    args: dict[str, Any] = {}
    if at:
        user, colon, password = userinfo.partition(":")
        args["user"] = unquote(user)
        if colon:
            args["password"] = unquote(password)
    host, colon, port = hostport.partition(":")
    if host:
        args["host"] = unquote(host)
    if colon:
        if not port.isdigit():
            raise NotHere("port is not a number")
        args["port"] = int(port)
    if parts.path.strip("/"):
        args["dbname"] = unquote(parts.path[1:])
    query = parse_qsl(parts.query, keep_blank_values=True)
    if len({k for k, _ in query}) != len(query) or any(k in args for k, _ in query):
        raise NotHere("a query key given twice")
    return args | dict(query)


def _postgres(
    url: str,
    states: Sequence[str],
    limit: int,
    template_ids: Callable[[Sequence[IncidentRow]], list[int]],
) -> Listing:
    try:
        import psycopg
    except ImportError:
        raise NotHere("no psycopg") from None
    args = _postgres_args(url)
    try:
        with psycopg.connect(**args) as conn, conn.cursor() as cur:
            listing = _read(cur, "%s", states, limit, template_ids, _pg_datetime)
            conn.rollback()
            return listing
    except psycopg.Error as exc:
        raise NotHere(str(exc)) from None


def _read(
    cur: Any,
    mark: str,
    states: Sequence[str],
    limit: int,
    template_ids: Callable[[Sequence[IncidentRow]], list[int]],
    when: Callable[[Any], datetime | None],
) -> Listing:
    cur.execute(f"SELECT value FROM monitor_state WHERE key = {mark}", (SCRUB_MARK,))
    found = cur.fetchone()
    scrubbed = _json(found[0]) if found else None
    if not isinstance(scrubbed, dict) or not _at_least(scrubbed.get("ruleset", 0), RULESET):
        raise NotHere("rows not scrubbed under the current rules yet")
    where = f" WHERE state IN ({', '.join([mark] * len(states))})" if states else ""
    cur.execute(
        f"SELECT {COLUMNS} FROM incident{where} ORDER BY id DESC LIMIT {mark}",
        (*states, limit),
    )
    rows = [_row(r, when) for r in cur.fetchall()]
    templates: dict[int, str] = {}
    wanted = template_ids(rows)
    if wanted:
        marks = ", ".join([mark] * len(wanted))
        cur.execute(f"SELECT id, template FROM log_template WHERE id IN ({marks})", wanted)
        templates = {i: t for i, t in cur.fetchall() if i is not None}
    return Listing(rows, templates)


def _at_least(value: Any, least: int) -> bool:
    try:
        return int(value) >= least
    except (TypeError, ValueError):
        return False


def _row(r: Sequence[Any], when: Callable[[Any], datetime | None]) -> IncidentRow:
    try:
        state = IncidentState(r[1])
    except ValueError:
        raise NotHere(f"unknown state {r[1]!r}") from None
    opened, first, last = when(r[11]), when(r[12]), when(r[13])
    if opened is None or first is None or last is None or r[15] is None:
        raise NotHere("a required value is missing")
    return IncidentRow(
        id=r[0],
        state=state,
        source=r[2],
        target=r[3],
        kind=r[4],
        severity=r[5],
        count=r[6],
        fingerprint=r[7],
        title=r[8],
        message=r[9],
        monitor_id=r[10],
        opened_at=opened,
        first_seen=first,
        last_seen=last,
        resolved_at=when(r[14]),
        flapping=bool(r[15]),
        reopen_count=r[16],
        details=_json(r[17]),
    )


def _json(value: Any) -> Any:
    """A JSON column as SQLAlchemy's ``JSON`` reads it (psycopg decodes it already)."""
    if isinstance(value, str | bytes):
        try:
            return json.loads(value)
        except ValueError:
            raise NotHere("a JSON column does not parse") from None
    return value


def _utc(value: datetime) -> datetime:
    """``UTCDateTime.process_result_value``."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def _sqlite_datetime(value: Any) -> datetime | None:
    """SQLAlchemy's SQLite ``DATETIME`` (``datetime.fromisoformat``), then ``UTCDateTime``."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise NotHere("a time is not text")
    try:
        return _utc(datetime.fromisoformat(value))
    except ValueError:
        raise NotHere("a time does not parse") from None


def _pg_datetime(value: Any) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise NotHere("a time is not a timestamp")
    return _utc(value)
