"""Tokens: shown once, stored as a sha256 only, verified, revoked at once."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from sqlmodel import col, select

from guard.access.roles import Role
from guard.access.tokens import (
    TokenError,
    create_token,
    list_tokens,
    revoke_token,
    role_of,
    verify_token,
)
from guard.store.db import Database, open_database
from guard.store.models import AccessToken, AuditEntry

pytestmark = pytest.mark.unit


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "guard.db"


@pytest.fixture
def db(path: Path) -> Database:
    return open_database(f"sqlite:///{path}")


def stored_bytes(db: Database, path: Path) -> bytes:
    """Every byte of the store on disk: the file, and its WAL if closing left one."""
    db.dispose()
    wal = path.with_name(path.name + "-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def test_the_secret_is_shown_once_and_only_its_hash_is_stored(db: Database, path: Path) -> None:
    secret = create_token(db, "deploy-bot", Role.operator)
    assert secret.startswith("gat_") and len(secret) == 47
    with db.session() as s:
        (row,) = s.exec(select(AccessToken)).all()
    assert row.digest == hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in repr(row.model_dump())
    disk = stored_bytes(db, path)
    assert secret.encode() not in disk
    assert secret[4:].encode() not in disk  # not even without its prefix
    assert row.digest.encode() in disk  # the file was read: the hash is there


def test_verify_gives_name_and_role_and_notes_the_use(db: Database) -> None:
    secret = create_token(db, "alice", Role.approver)
    info = verify_token(db, secret)
    assert info is not None and (info.name, info.role) == ("alice", Role.approver)
    (listed,) = list_tokens(db)
    assert listed.last_used_at is not None and listed.revoked_at is None


@pytest.mark.parametrize(
    "wrong",
    ["", "gat_", "Bearer x", "gat_" + "A" * 43, "x" * 5000, "gat_" + "é" * 43],
)
def test_a_wrong_token_is_refused(db: Database, wrong: str) -> None:
    create_token(db, "alice", Role.admin)
    assert verify_token(db, wrong) is None


def test_a_token_one_character_off_is_refused(db: Database) -> None:
    secret = create_token(db, "alice", Role.admin)
    off = secret[:-1] + ("A" if secret[-1] != "A" else "B")
    assert verify_token(db, off) is None
    assert verify_token(db, secret) is not None


def test_revoking_takes_effect_at_once(db: Database) -> None:
    secret = create_token(db, "alice", Role.approver)
    other = create_token(db, "bob", Role.viewer)
    assert verify_token(db, secret) is not None and role_of(db, "alice") is Role.approver
    assert revoke_token(db, "alice") is True
    assert verify_token(db, secret) is None
    assert role_of(db, "alice") is None
    assert revoke_token(db, "alice") is False  # already revoked
    assert revoke_token(db, "nobody") is False
    assert verify_token(db, other) is not None  # the others still work
    by_name = {t.name: t for t in list_tokens(db)}
    assert by_name["alice"].revoked_at is not None and by_name["bob"].revoked_at is None


def test_names_are_checked_and_never_reused(db: Database) -> None:
    create_token(db, "alice", Role.viewer)
    with pytest.raises(TokenError, match="a token named 'alice' exists"):
        create_token(db, "alice", Role.admin)
    revoke_token(db, "alice")
    with pytest.raises(TokenError, match="exists"):
        create_token(db, "alice", Role.admin)
    for bad in ("", "-x", "a b", "a/b", "x" * 65, "<script>"):
        with pytest.raises(TokenError, match="token name"):
            create_token(db, bad, Role.viewer)
    assert [t.name for t in list_tokens(db)] == ["alice"]


def test_creating_and_revoking_are_audited_without_the_secret(db: Database) -> None:
    secret = create_token(db, "alice", Role.approver, by="cli:ann")
    revoke_token(db, "alice", by="cli:ann")
    with db.session() as s:
        rows = s.exec(select(AuditEntry).order_by(col(AuditEntry.seq))).all()
    assert [(r.actor, r.action, r.subject) for r in rows] == [
        ("cli:ann", "access.token_created", "token:alice"),
        ("cli:ann", "access.token_revoked", "token:alice"),
    ]
    assert rows[0].data == {"role": "approver"}
    assert all(secret not in repr(r.model_dump()) for r in rows)
