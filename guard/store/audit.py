"""The tamper-evident audit log: an append-only SHA-256 hash chain in the database.

Each entry's ``hash`` is ``sha256(prev_hash + canonical_json(entry))`` where the entry is its
``seq``, ``at``, ``actor``, ``action``, ``subject`` and ``data``. Editing, deleting or reordering
any row breaks the chain at that row, which ``verify`` names. (Deleting only the newest rows is
visible only against a copy of the head hash kept elsewhere: ``head`` returns it for that.)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlmodel import Session, col, select

from guard.exceptions import AuditChainBroken
from guard.records import utcnow
from guard.store.models import AuditEntry

GENESIS = "0" * 64


def canonical_json(value: Any) -> str:
    """Deterministic JSON: sorted keys, no whitespace, UTF-8 kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def entry_hash(prev_hash: str, seq: int, at: datetime, actor: str, action: str,
               subject: str, data: dict[str, Any]) -> str:
    body = canonical_json(
        {"seq": seq, "at": at.isoformat(), "actor": actor, "action": action,
         "subject": subject, "data": data}
    )
    return hashlib.sha256((prev_hash + body).encode()).hexdigest()


def append(session: Session, *, actor: str, action: str, subject: str,
           data: dict[str, Any] | None = None) -> AuditEntry:
    """Add one entry to the chain inside the caller's transaction."""
    bind = session.get_bind()
    if bind.dialect.name == "postgresql":  # one appender at a time, until this transaction ends
        session.execute(text("SELECT pg_advisory_xact_lock(7423911)"))
    last = session.exec(select(AuditEntry).order_by(col(AuditEntry.seq).desc()).limit(1)).first()
    seq = (last.seq + 1) if last else 1
    prev = last.hash if last else GENESIS
    clean: dict[str, Any] = json.loads(canonical_json(data or {}))
    at = utcnow()
    entry = AuditEntry(
        seq=seq, at=at, actor=actor, action=action, subject=subject, data=clean, prev_hash=prev,
        hash=entry_hash(prev, seq, at, actor, action, subject, clean),
    )
    session.add(entry)
    session.flush()
    return entry


def verify_entries(entries: Iterable[AuditEntry]) -> int:
    """Check a chain given in ``seq`` order; return its length or raise ``AuditChainBroken``."""
    prev, expected_seq, n = GENESIS, 1, 0
    for e in entries:
        if e.seq != expected_seq:
            missing = "missing or reordered" if e.seq > expected_seq else "out of order"
            raise AuditChainBroken(expected_seq, f"entry {missing} (found #{e.seq} next)")
        if e.prev_hash != prev:
            raise AuditChainBroken(e.seq, "prev_hash does not match the entry before it")
        if entry_hash(prev, e.seq, e.at, e.actor, e.action, e.subject, e.data) != e.hash:
            raise AuditChainBroken(e.seq, "contents do not match its hash (the row was altered)")
        prev, expected_seq, n = e.hash, expected_seq + 1, n + 1
    return n


def verify(session: Session) -> int:
    """Verify the whole chain in the database; return how many entries hold."""
    rows = session.exec(select(AuditEntry).order_by(col(AuditEntry.seq)))
    return verify_entries(rows)


def head(session: Session) -> tuple[int, str]:
    """The newest entry's ``(seq, hash)``, or ``(0, GENESIS)`` for an empty log."""
    last = session.exec(select(AuditEntry).order_by(col(AuditEntry.seq).desc()).limit(1)).first()
    return (last.seq, last.hash) if last else (0, GENESIS)
