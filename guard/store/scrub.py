"""The store keeps only redacted text: every row is scrubbed as it is flushed, old rows once.

A ``before_flush`` hook on every session runs the redaction policy over the text and JSON
columns of each new or changed row, whatever wrote it (triage, the agent, the outbox, a
human's fix). Audit entries are the exception: ``guard.store.audit`` redacts their data before it
hashes them, and rewriting one afterwards would break the chain. Primary keys are left alone.

``migrate`` scrubs rows written before this existed (or under an older rule set), once per
``RULESET`` version, then checkpoints SQLite's WAL so the old text does not linger there
(``secure_delete`` zeroes the freed pages).

Tested by ``tests/security/test_redact.py``.
"""

from __future__ import annotations

from typing import Any

from loguru import logger
from sqlalchemy import event, inspect
from sqlmodel import Session, SQLModel, select

from guard.redact import redact_value
from guard.store.models import AuditEntry, MonitorState

RULESET = 1  # bump when the rules change enough that stored rows should be scrubbed again
_MARK = "guard:redaction"
_SKIP = (AuditEntry,)


def scrub(obj: Any, *, changed_only: bool = True) -> bool:
    """Redact ``obj``'s str and JSON columns in place; True if anything changed."""
    if isinstance(obj, _SKIP) or not isinstance(obj, SQLModel):
        return False
    state = inspect(obj)
    touched = False
    for attr in state.mapper.column_attrs:
        if any(c.primary_key for c in attr.columns):
            continue
        if changed_only and state.persistent and not state.attrs[attr.key].history.has_changes():
            continue
        value = getattr(obj, attr.key)
        if not isinstance(value, str | dict | list):
            continue
        clean = redact_value(value)
        if clean != value:
            setattr(obj, attr.key, clean)
            touched = True
    return touched


def _before_flush(session: Any, _context: Any, _instances: Any) -> None:
    for obj in list(session.new) + list(session.dirty):
        scrub(obj)


def install() -> None:
    """Scrub on every flush of every session (idempotent)."""
    if not event.contains(Session, "before_flush", _before_flush):
        event.listen(Session, "before_flush", _before_flush)


def is_current(session: Session) -> bool:
    """Whether the stored rows were scrubbed under the current rules (``migrate`` has nothing
    to do)."""
    mark = session.get(MonitorState, _MARK)
    return mark is not None and int(mark.value.get("ruleset", 0)) >= RULESET


def mark_current(engine: Any) -> None:
    """Say a new, empty store is scrubbed under the current rules (``migrate`` skips it)."""
    with Session(engine) as session:
        session.merge(MonitorState(key=_MARK, value={"ruleset": RULESET, "rows": 0}))
        session.commit()


def migrate(engine: Any) -> int:
    """Scrub every stored row once per rule-set version; return how many rows changed."""
    changed = 0
    with Session(engine, expire_on_commit=False) as session:
        if is_current(session):
            return 0
        for table in SQLModel.__subclasses__():
            if getattr(table, "__table__", None) is None or table in _SKIP:
                continue
            for row in session.exec(select(table)):
                changed += scrub(row, changed_only=False)
        session.merge(MonitorState(key=_MARK, value={"ruleset": RULESET, "rows": changed}))
        session.commit()
    if changed:
        logger.info("redacted secrets in {} stored rows", changed)
        if engine.dialect.name == "sqlite":
            raw = engine.raw_connection()  # autocommit: outside any transaction
            try:
                raw.cursor().execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                raw.close()
    return changed
