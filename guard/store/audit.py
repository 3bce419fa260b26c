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

Retention (``guard.store.retention``) may remove the oldest entries, never silently: it anchors
the head, appends an ``audit.cut`` entry naming the last entry it removes, then a *cut* line
``{"seq", "hash", "at", "cut": true, "n", "entry"}``, and only then deletes. ``verify`` trusts a
cut only when an entry left in the chain records it (keyed under ``audit.key`` when set) and an
anchor written before it covers an entry after it; the chain then starts after the cut.

Each line of the anchor file carries its position ``n``, and the entry written with it records
that ``n``: a file with fewer lines than the chain says were written has lost its own history.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlmodel import Session, col, select

from guard.domain.exceptions import AuditChainBroken
from guard.domain.records import utcnow
from guard.harness.crashpoints import reached
from guard.redact import redact, redact_value
from guard.store.models import AuditEntry

GENESIS = "0" * 64
KEYED = "hmac:"
ANCHORS = "audit-anchors.jsonl"
VERIFIED = "audit:verified"  # the state row of the last `guard audit verify`: at, ok, entries

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
    n: int = 0  # its line in the anchor file (0: a head given with --head)


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
    entries: Iterable[AuditEntry],
    anchors: Sequence[Anchor] = (),
    key: bytes | None = None,
    file_lines: int | None = None,
) -> int:
    """Check a chain given in ``seq`` order against ``anchors``; return its length or raise
    ``AuditChainBroken``. With ``key``, the newest entry must be keyed. ``file_lines``: how many
    lines the anchor file has (None: do not check it against the chain)."""
    cuts = [a for a in anchors if a.cut]
    cut = max(cuts, key=lambda a: (a.seq, a.n)) if cuts else None
    prev, expected_seq, n, keyed_seen = GENESIS, 1, 0, False
    later = list(anchors)
    if cut is not None:
        prev, expected_seq = cut.hash, cut.seq + 1
        later = [a for a in anchors if a.seq > cut.seq]
    anchored = {a.seq for a in later}
    seen: dict[int, str] = {}
    claimed = (0, 0)  # the highest anchor line an entry says was written, and that entry
    recorded: AuditEntry | None = None  # the entry that records the cut
    for e in entries:
        if cut is not None and e.seq <= cut.seq:
            continue  # pruned by retention (its rows may outlive the cut for a moment)
        _check_entry(e, prev, expected_seq, keyed_seen, key)
        keyed_seen = keyed_seen or e.hash.startswith(KEYED)
        if e.seq in anchored:
            seen[e.seq] = e.hash
        line = e.data.get("n") if e.action in ("audit.anchored", "audit.cut") else None
        if isinstance(line, int) and line > claimed[0]:
            claimed = (line, e.seq)
        if cut is not None and recorded is None and _records(e, cut):
            recorded = e
        prev, expected_seq, n = e.hash, expected_seq + 1, n + 1
    if cut is not None:
        _check_cut(cut, recorded, anchors, key)
    last = expected_seq - 1
    for a in later:
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
    if cut is not None:
        for a in anchors:
            if not a.n and a.seq == cut.seq and a.hash != cut.hash:
                raise AuditChainBroken(
                    a.seq, f"{a.where} is not the entry {cut.where} says it removed"
                )
    if file_lines is not None and claimed[0] > file_lines:
        raise AuditChainBroken(
            claimed[1],
            f"entry #{claimed[1]} wrote line {claimed[0]} of {ANCHORS} but the file has "
            f"{file_lines}: the anchor file's own history shrank (lines were deleted)",
        )
    if key is not None and n and not keyed_seen:
        raise AuditChainBroken(
            n,
            "audit.key is set but no entry is keyed, so the chain could "
            "have been recomputed without it; `guard audit anchor` appends a "
            "keyed entry that seals the older ones",
        )
    return n


def _records(e: AuditEntry, cut: Anchor) -> bool:
    """Whether ``e`` is retention's record of ``cut`` (``store.pruned``: written before the
    ``audit.cut`` entry existed, it names the seq only)."""
    if e.action == "audit.cut":
        return e.data.get("seq") == cut.seq and e.data.get("hash") == cut.hash
    return e.action == "store.pruned" and e.data.get("audit_cut") == cut.seq


def _check_cut(
    cut: Anchor, recorded: AuditEntry | None, anchors: Sequence[Anchor], key: bytes | None
) -> None:
    """A cut counts only if retention wrote it: an anchor written before it covers an entry
    after it, and an entry left in the chain (keyed, with ``key``) records it."""
    if not any(not a.cut and 0 < a.n < cut.n and a.seq > cut.seq for a in anchors):
        raise AuditChainBroken(
            cut.seq,
            f"{cut.where} removes entries up to #{cut.seq}, but no anchor written before it "
            f"covers an entry after #{cut.seq} (retention anchors the head before it cuts): "
            "the cut was not written by Guard and the log was emptied",
        )
    if recorded is None:
        raise AuditChainBroken(
            cut.seq,
            f"{cut.where} removes entries up to #{cut.seq}, but no entry left in the chain "
            "records that cut (retention writes an audit.cut entry before it deletes): the "
            "cut was forged and the entries were deleted",
        )
    if key is not None and not recorded.hash.startswith(KEYED):
        raise AuditChainBroken(
            recorded.seq,
            f"the entry recording {cut.where} is not keyed while audit.key is set: the cut "
            "cannot be authenticated",
        )


def read_anchors(path: Path) -> list[Anchor]:
    """Every anchor in ``path`` (none if it does not exist); a damaged line is a failure."""
    if not path.is_file():
        return []
    found: list[Anchor] = []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            anchor = Anchor(
                int(row["seq"]),
                str(row["hash"]),
                str(row["at"]),
                f"{'cut' if row.get('cut') else 'anchor'} {i} of {path.name} ({row['at']})",
                cut=bool(row.get("cut", False)),
                n=len(found) + 1,
            )
            numbered = int(row.get("n", anchor.n))
        except (ValueError, KeyError, TypeError):
            raise AuditChainBroken(
                0, f"{path} line {i} is not an anchor (the anchor file was damaged)"
            ) from None
        if numbered != anchor.n:
            raise AuditChainBroken(
                anchor.seq,
                f"{anchor.where} was written as anchor {numbered}: the anchor file's own "
                "history shrank or was reordered",
            )
        found.append(anchor)
    return found


def verify(session: Session, anchors: Sequence[Anchor] = (), file_lines: int | None = None) -> int:
    """Verify the whole chain in the database against ``anchors`` (and, given ``file_lines``,
    the anchor file's length); return how many entries hold. Uses the key given to
    ``use_key``."""
    rows = session.exec(select(AuditEntry).order_by(col(AuditEntry.seq)))
    return verify_entries(rows, anchors, _key, file_lines)


def head(session: Session) -> tuple[int, str]:
    """The newest entry's ``(seq, hash)``, or ``(0, GENESIS)`` for an empty log."""
    last = session.exec(select(AuditEntry).order_by(col(AuditEntry.seq).desc()).limit(1)).first()
    return (last.seq, last.hash) if last else (0, GENESIS)


def anchor(db: Any, path: Path, actor: str = "guard") -> Anchor:
    """Append an ``audit.anchored`` entry, then record the head in ``path`` (one JSON line,
    flushed to disk)."""
    with _locked(path) as n:
        with db.session() as session:
            append(
                session,
                actor=actor,
                action="audit.anchored",
                subject="audit",
                data={"file": path.name, "n": n},
            )
            seq, digest = head(session)
        at = _write_anchor(path, {"seq": seq, "hash": digest, "n": n})
    return Anchor(seq, digest, at, f"anchor {n} of {path.name} ({at})", n=n)


def record_cut(db: Any, path: Path, seq: int, digest: str, actor: str = "guard") -> Anchor:
    """Record that entries up to ``seq`` (whose hash is ``digest``) are to be pruned: an
    ``audit.cut`` entry in the chain (keyed under ``audit.key``), then a cut line in ``path``."""
    with _locked(path) as n:
        with db.session() as session:
            entry = append(
                session,
                actor=actor,
                action="audit.cut",
                subject="audit",
                data={"seq": seq, "hash": digest, "file": path.name, "n": n},
            )
            recorded = entry.seq
        at = _write_anchor(
            path, {"seq": seq, "hash": digest, "cut": True, "n": n, "entry": recorded}
        )
    return Anchor(seq, digest, at, f"cut {n} of {path.name} ({at})", cut=True, n=n)


@contextmanager
def _locked(path: Path) -> Iterator[int]:
    """Hold the anchor file's lock (one writer at a time, across processes) and yield the
    position of the line about to be written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            lines = path.read_text().splitlines() if path.is_file() else []
            yield sum(1 for line in lines if line.strip()) + 1
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _write_anchor(path: Path, row: dict[str, Any]) -> str:
    """Append one anchor line, flushed to disk; return its time."""
    at = utcnow().isoformat(timespec="seconds")
    with open(path, "a") as f:
        f.write(json.dumps({**row, "at": at}) + "\n")
        f.flush()
        os.fsync(f.fileno())
    return at
