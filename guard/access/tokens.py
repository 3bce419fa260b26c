"""Tokens for the web console, the API and machines: ``gat_`` and 43 random characters.

Only the secret's sha256 is stored (table ``access_token``), so the database cannot give a
token back; ``create_token`` returns the secret once. ``verify_token`` finds the row by the
digest and compares the digests with ``hmac.compare_digest``; a revoked token fails from the
moment ``revoke_token`` commits. Creating and revoking are audited; a token's uses are audited
by the entries that use it, under its actor name ``token:<name>``.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from guard.access.roles import Role
from guard.domain.exceptions import GuardError
from guard.domain.records import utcnow
from guard.store import audit
from guard.store.db import Database
from guard.store.models import AccessToken

PREFIX = "gat_"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_SECRET = re.compile(r"gat_[A-Za-z0-9_-]{43}")
LAST_USED_EVERY = timedelta(seconds=60)  # last_used_at is written at most once a minute


class TokenError(GuardError):
    """A token cannot be created as asked (bad name, name taken)."""


@dataclass(frozen=True)
class TokenInfo:
    """Who a valid token is."""

    name: str
    role: Role


@dataclass(frozen=True)
class TokenListing:
    """A token as ``guard access list`` shows it: no secret, no digest."""

    name: str
    role: Role
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


def digest_of(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def create_token(db: Database, name: str, role: Role, *, by: str = "cli") -> str:
    """Store a new token ``name`` with ``role`` and return its secret (shown once, never
    stored). A name is used once, even after its token is revoked."""
    if not _NAME.fullmatch(name):
        raise TokenError(
            f"token name {name!r}: 1-64 letters, digits, '.', '_' or '-', starting with a "
            "letter or digit"
        )
    secret = PREFIX + secrets.token_urlsafe(32)
    try:
        with db.session() as session:
            if session.exec(select(AccessToken).where(AccessToken.name == name)).first():
                raise TokenError(f"a token named {name!r} exists (names are not reused)")
            session.add(AccessToken(name=name, role=role.name, digest=digest_of(secret)))
            audit.append(
                session,
                actor=by,
                action="access.token_created",
                subject=f"token:{name}",
                data={"role": role.name},
            )
    except IntegrityError:  # created meanwhile by another process
        raise TokenError(f"a token named {name!r} exists (names are not reused)") from None
    return secret


def verify_token(db: Database, secret: str) -> TokenInfo | None:
    """Who ``secret`` is, or None for a wrong, malformed or revoked token. It opens its own
    transaction (it notes the use): call it outside any other, and off an event loop."""
    if not _SECRET.fullmatch(secret):
        return None
    wanted = digest_of(secret)
    now = utcnow()
    with db.session() as session:
        row = session.exec(select(AccessToken).where(AccessToken.digest == wanted)).first()
        if row is None or not hmac.compare_digest(row.digest, wanted) or row.revoked_at:
            return None
        if row.last_used_at is None or now - row.last_used_at >= LAST_USED_EVERY:
            row.last_used_at = now
            session.add(row)
        return TokenInfo(row.name, Role[row.role])


def revoke_token(db: Database, name: str, *, by: str = "cli") -> bool:
    """Revoke token ``name``: False if there is none, or it was revoked already."""
    with db.session() as session:
        row = session.exec(select(AccessToken).where(AccessToken.name == name)).first()
        if row is None or row.revoked_at is not None:
            return False
        row.revoked_at = utcnow()
        session.add(row)
        audit.append(session, actor=by, action="access.token_revoked", subject=f"token:{name}")
    return True


def list_tokens(db: Database) -> list[TokenListing]:
    """Every token, oldest first, revoked ones too."""
    with db.session() as session:
        rows = session.exec(select(AccessToken).order_by(col(AccessToken.id))).all()
        return [
            TokenListing(r.name, Role[r.role], r.created_at, r.last_used_at, r.revoked_at)
            for r in rows
        ]


def role_of(db: Database, name: str) -> Role | None:
    """The role of the live token ``name`` (None: unknown or revoked).

    Read on the DB-API connection, outside any transaction: the gate asks it inside the
    transaction ``queue_command`` holds, and on SQLite a second ORM session would wait for
    that transaction's write lock."""
    mark = "?" if db.engine.dialect.paramstyle == "qmark" else "%s"
    conn = db.engine.raw_connection()
    try:
        cur = conn.cursor()
        cur.execute(f"SELECT role, revoked_at FROM access_token WHERE name = {mark}", (name,))
        found = cur.fetchone()
        cur.close()
    finally:
        conn.close()
    if found is None or found[1] is not None or found[0] not in Role.__members__:
        return None
    return Role[found[0]]
