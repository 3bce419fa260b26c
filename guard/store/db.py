"""The database: one SQLAlchemy engine (SQLite in WAL mode by default, Postgres by URL).

Tested by ``tests/store/test_read_only_open.py``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event, inspect, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session, SQLModel, create_engine

from guard.domain.exceptions import StoreError
from guard.store import cluster as _cluster  # noqa: F401  (registers the tables)
from guard.store import correlation as _correlation  # noqa: F401  (registers the tables)
from guard.store import edits as _edits  # noqa: F401  (registers the outbox edit targets)
from guard.store import escalation as _escalation  # noqa: F401  (registers the tables)
from guard.store import holds as _holds  # noqa: F401  (registers remedy_hold)
from guard.store import ladder as _ladder  # noqa: F401  (registers skill_ladder)
from guard.store import legacy, scrub, stringids
from guard.store import models as _models
from guard.store import paging as _paging  # noqa: F401  (registers page_outbox)
from guard.store import silences as _silences  # noqa: F401  (registers silence)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (see _begin_immediate)
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA secure_delete=ON")  # freed pages are zeroed: a redacted row leaves no copy
    cur.close()


def _begin_immediate(conn: Any) -> None:
    """Every transaction takes SQLite's write lock up front, so two writers (threads, or the CLI
    and ``guard run``) queue on ``busy_timeout`` instead of interleaving: the audit chain's next
    ``seq`` is read and written by one transaction at a time, and no snapshot goes stale."""
    conn.exec_driver_sql("BEGIN IMMEDIATE")


class Database:
    """Owns the engine; hands out sessions that commit on success and roll back on error."""

    def __init__(self, url: str) -> None:
        self.url = url
        parsed = make_url(url)
        kwargs: dict[str, Any] = {}
        if parsed.get_backend_name() == "sqlite":
            if parsed.database and parsed.database != ":memory:":
                Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": 10}
        try:
            self.engine: Engine = create_engine(url, **kwargs)
        except Exception as exc:
            raise StoreError(f"cannot use database_url {parsed!r}: {exc}") from None
        scrub.install()
        if parsed.get_backend_name() == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
            event.listen(self.engine, "begin", _begin_immediate)

    def create_all(self) -> None:
        """Create missing tables (Guard's schema is additive), make an older release's integer
        message ids strings (once; ``guard.store.stringids``), move the rows of an older
        release's per-channel tables into them (once; ``guard.store.legacy``), and redact rows
        stored in clear by an older Guard (once; see ``guard.store.scrub``). A new database
        has no older rows: it is only marked scrubbed (the scan costs ~0.1 s a table set)."""
        try:
            with self._schema_lock():
                fresh = not inspect(self.engine).get_table_names()
                SQLModel.metadata.create_all(self.engine)
                if fresh:
                    scrub.mark_current(self.engine)
                    return
                for table in SQLModel.metadata.sorted_tables:  # tables made by an older Guard
                    for index in table.indexes:
                        if index.name in _models.LATER_INDEXES:
                            index.create(self.engine, checkfirst=True)
                stringids.convert(self.engine)
                legacy.move(self.engine)
                scrub.migrate(self.engine)
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot open the database {self.engine.url!r}: {exc}") from None

    def schema_current(self) -> bool:
        """Whether ``create_all`` would change nothing: every table and every later index is
        there, no integer message id waits to become a string, no older per-channel table
        waits to be moved, and the rows were scrubbed under
        the current rules. Read-only commands then
        skip it (and its lock on Postgres)."""
        try:
            found = inspect(self.engine)
            names = set(found.get_table_names())
            if not set(SQLModel.metadata.tables) <= names or legacy.pending(names):
                return False
            if stringids.pending(found):
                return False
            for table in SQLModel.metadata.sorted_tables:
                later = {i.name for i in table.indexes if i.name in _models.LATER_INDEXES}
                if later and not later <= {i["name"] for i in found.get_indexes(table.name)}:
                    return False
            with Session(self.engine) as session:
                return scrub.is_current(session)
        except SQLAlchemyError:
            return False

    @contextmanager
    def _schema_lock(self) -> Iterator[None]:
        """On Postgres, replicas starting together create the schema one at a time."""
        if self.engine.dialect.name != "postgresql":
            yield
            return
        with self.engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(7423912)"))
            conn.commit()
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(7423912)"))
                conn.commit()

    @property
    def is_postgres(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A transaction: committed when the block ends, rolled back if it raises."""
        with Session(self.engine, expire_on_commit=False) as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    def dispose(self) -> None:
        self.engine.dispose()


def open_database(url: str, *, read_only: bool = False) -> Database:
    """Open (and create if needed) the database at ``url``.

    ``read_only``: for commands that only read; the schema is checked, and created or
    migrated only if it is not current (``Database.schema_current``)."""
    db = Database(url)
    if not (read_only and db.schema_current()):
        db.create_all()
    return db
