"""The tamper-evident audit log: an append-only hash chain in the database, anchored outside it.

Each entry's ``hash`` is ``sha256(prev_hash + canonical_json(entry))`` where the entry is its
``seq``, ``at``, ``actor``, ``action``, ``subject`` and ``data``. With ``audit.key`` set it is
``"hmac:" + hmac_sha256(key, prev_hash + canonical_json(entry))`` instead: the prefix says which
scheme an entry uses, so a chain written before the key was set still verifies, and whoever can
write the database but not read the key cannot recompute the chain after editing a row.

Editing, deleting or reordering any row breaks the chain at that row, which ``verify`` names.
Deleting only the newest rows leaves a shorter chain that holds: anchors catch that. An anchor
is the head ``{seq, hash, at}`` appended to ``audit-anchors.jsonl`` on the data volume (``guard
audit anchor``; ``guard run`` every ``audit.anchor_every``), and each daily report carries the
head to the chat, where it stays. ``verify`` fails when an anchored entry is gone or changed.

Retention (``guard.store.retention``) may remove the oldest entries, never silently: it first
appends a *cut* anchor ``{"seq", "hash", "at", "cut": true}`` naming the last entry it removes,
and ``verify`` then starts the chain after the latest cut (its first entry must link to the
cut's hash); anchors at or before the cut are history.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlmodel import Session, col, select

from guard.crashpoints import reached
from guard.exceptions import AuditChainBroken
from guard.records import utcnow
from guard.redact import redact, redact_value
from guard.store.models import AuditEntry

GENESIS = "0" * 64
KEYED = "hmac:"
ANCHORS = "audit-anchors.jsonl"

_key: bytes | None = None


def use_key(key: str | None) -> None:
    """Write (and verify) keyed entries with ``key`` from now on; ``None``: unkeyed."""
    global _key
    _key = key.encode() if key else None


def configure(settings: Any) -> None:
    """Use ``settings.audit.key`` (if any) from now on."""
    key = settings.audit.key
    use_key(key.get_secret_value() if key is not None else None)


def canonical_json(value: Any) -> str:
    """Deterministic JSON: sorted keys, no whitespace, UTF-8 kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def entry_hash(
    prev_hash: str,
    seq: int,
    at: datetime,
    actor: str,
    action: str,
    subject: str,
    data: dict[str, Any],
    key: bytes | None = None,
) -> str:
    body = (
        prev_hash
        + canonical_json(
            {
                "seq": seq,
                "at": at.isoformat(),
                "actor": actor,
                "action": action,
                "subject": subject,
                "data": data,
            }
        )
    ).encode()
    if key is None:
        return hashlib.sha256(body).hexdigest()
    return KEYED + hmac.new(key, body, hashlib.sha256).hexdigest()


def append(
    session: Session, *, actor: str, action: str, subject: str, data: dict[str, Any] | None = None
) -> AuditEntry:
    """Add one entry to the chain inside the caller's transaction (its text redacted first)."""
    bind = session.get_bind()
    if bind.dialect.name == "postgresql":  # one appender at a time, until this transaction ends
        session.execute(text("SELECT pg_advisory_xact_lock(7423911)"))
    last = session.exec(select(AuditEntry).order_by(col(AuditEntry.seq).desc()).limit(1)).first()
    seq = (last.seq + 1) if last else 1
    prev = last.hash if last else GENESIS
    clean: dict[str, Any] = redact_value(json.loads(canonical_json(data or {})))
    subject = redact(subject)
    at = utcnow()
    entry = AuditEntry(
        seq=seq,
        at=at,
        actor=actor,
        action=action,
        subject=subject,
        data=clean,
        prev_hash=prev,
        hash=entry_hash(prev, seq, at, actor, action, subject, clean, _key),
    )
    session.add(entry)
    session.flush()
    reached("audit.append")
    return entry


@dataclass(frozen=True)
class Anchor:
    """A head of the chain recorded outside the database."""

    seq: int
    hash: str
    at: str
    where: str  # how ``verify`` names it: "anchor 3 of audit-anchors.jsonl (2026-...)"
    cut: bool = False  # entries up to ``seq`` were pruned; the chain goes on from ``hash``


def _check_entry(
    e: AuditEntry, prev: str, expected_seq: int, keyed_seen: bool, key: bytes | None
) -> None:
    if e.seq != expected_seq:
        missing = "missing or reordered" if e.seq > expected_seq else "out of order"
        raise AuditChainBroken(expected_seq, f"entry {missing} (found #{e.seq} next)")
    if e.prev_hash != prev:
        raise AuditChainBroken(e.seq, "prev_hash does not match the entry before it")
    keyed = e.hash.startswith(KEYED)
    if keyed and key is None:
        raise AuditChainBroken(e.seq, "the entry is keyed (HMAC) but audit.key is not set")
    if keyed_seen and not keyed:
        raise AuditChainBroken(
            e.seq, "an unkeyed entry after keyed ones (the chain was recomputed without audit.key)"
        )
    expected = entry_hash(
        prev, e.seq, e.at, e.actor, e.action, e.subject, e.data, key if keyed else None
    )
    if not hmac.compare_digest(expected, e.hash):
        why = " or was recomputed without audit.key" if keyed else ""
        raise AuditChainBroken(e.seq, f"contents do not match its hash (the row was altered{why})")


def verify_entries(
    entries: Iterable[AuditEntry], anchors: Sequence[Anchor] = (), key: bytes | None = None
) -> int:
    """Check a chain given in ``seq`` order against ``anchors``; return its length or raise
    ``AuditChainBroken``. With ``key``, the newest entry must be keyed."""
    cuts = [a for a in anchors if a.cut]
    cut = max(cuts, key=lambda a: a.seq) if cuts else None
    prev, expected_seq, n, keyed_seen = GENESIS, 1, 0, False
    if cut is not None:
        prev, expected_seq = cut.hash, cut.seq + 1
        anchors = [a for a in anchors if a.seq > cut.seq]
    anchored = {a.seq for a in anchors}
    seen: dict[int, str] = {}
    for e in entries:
        if cut is not None and e.seq <= cut.seq:
            continue  # pruned by retention (its rows may outlive the cut for a moment)
        _check_entry(e, prev, expected_seq, keyed_seen, key)
        keyed_seen = keyed_seen or e.hash.startswith(KEYED)
        if e.seq in anchored:
            seen[e.seq] = e.hash
        prev, expected_seq, n = e.hash, expected_seq + 1, n + 1
    last = expected_seq - 1
    for a in anchors:
        if a.seq > last:
            raise AuditChainBroken(
                a.seq,
                f"{a.where} recorded entry #{a.seq} but the chain ends "
                f"at #{last}: entries after it were deleted",
            )
        if a.seq > 0 and seen.get(a.seq) != a.hash:
            raise AuditChainBroken(
                a.seq,
                f"{a.where} recorded head {a.hash[:21]} that entry "
                f"#{a.seq} no longer has: the chain was rewritten",
            )
    if key is not None and n and not keyed_seen:
        raise AuditChainBroken(
            n,
            "audit.key is set but no entry is keyed, so the chain could "
            "have been recomputed without it; `guard audit anchor` appends a "
            "keyed entry that seals the older ones",
        )
    return n


def read_anchors(path: Path) -> list[Anchor]:
    """Every anchor in ``path`` (none if it does not exist); a damaged line is a failure."""
    if not path.is_file():
        return []
    found = []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            found.append(
                Anchor(
                    int(row["seq"]),
                    str(row["hash"]),
                    str(row["at"]),
                    f"anchor {i} of {path.name} ({row['at']})",
                    cut=bool(row.get("cut", False)),
                )
            )
        except (ValueError, KeyError, TypeError):
            raise AuditChainBroken(
                0, f"{path} line {i} is not an anchor (the anchor file was damaged)"
            ) from None
    return found


def verify(session: Session, anchors: Sequence[Anchor] = ()) -> int:
    """Verify the whole chain in the database against ``anchors``; return how many entries
    hold. Uses the key given to ``use_key``."""
    rows = session.exec(select(AuditEntry).order_by(col(AuditEntry.seq)))
    return verify_entries(rows, anchors, _key)


def head(session: Session) -> tuple[int, str]:
    """The newest entry's ``(seq, hash)``, or ``(0, GENESIS)`` for an empty log."""
    last = session.exec(select(AuditEntry).order_by(col(AuditEntry.seq).desc()).limit(1)).first()
    return (last.seq, last.hash) if last else (0, GENESIS)


def anchor(db: Any, path: Path, actor: str = "guard") -> Anchor:
    """Append an ``audit.anchored`` entry, then record the head in ``path`` (one JSON line,
    flushed to disk)."""
    with db.session() as session:
        append(
            session, actor=actor, action="audit.anchored", subject="audit", data={"file": path.name}
        )
        seq, digest = head(session)
    at = _write_anchor(path, {"seq": seq, "hash": digest})
    return Anchor(seq, digest, at, f"anchor in {path.name} ({at})")


def record_cut(path: Path, seq: int, digest: str) -> Anchor:
    """Record in ``path`` that entries up to ``seq`` (whose hash is ``digest``) are pruned."""
    at = _write_anchor(path, {"seq": seq, "hash": digest, "cut": True})
    return Anchor(seq, digest, at, f"cut in {path.name} ({at})", cut=True)


def _write_anchor(path: Path, row: dict[str, Any]) -> str:
    """Append one anchor line, flushed to disk; return its time."""
    at = utcnow().isoformat(timespec="seconds")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        f.write(json.dumps({**row, "at": at}) + "\n")
        f.flush()
        os.fsync(f.fileno())
    return at
