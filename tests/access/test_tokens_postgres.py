"""Tokens and the role policy on a real PostgreSQL: the gate reads a token's role on the DB-API
connection while ``queue_command`` holds its transaction, and revoking works at once."""

from __future__ import annotations

from sqlmodel import select

from guard.access.roles import Role
from guard.access.tokens import create_token, role_of, verify_token
from guard.store.db import open_database
from guard.store.models import AccessToken
from tests.access.queue_checks import tokens_at_the_queue
from tests.fakes.postgres import fresh_database


def test_tokens_and_the_gate_on_postgres(postgres_url: str) -> None:
    db = open_database(fresh_database(postgres_url))
    try:
        secret = create_token(db, "machine", Role.operator)
        with db.session() as s:
            (row,) = s.exec(select(AccessToken)).all()
        assert secret not in row.model_dump_json() and len(row.digest) == 64
        info = verify_token(db, secret)
        assert info is not None and info.role is Role.operator
        assert role_of(db, "machine") is Role.operator
        tokens_at_the_queue(db)
    finally:
        db.dispose()
