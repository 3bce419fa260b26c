"""Tokens and the role policy on a real PostgreSQL: the gate reads a token's role on the DB-API
connection while ``queue_command`` holds its transaction, and revoking works at once."""

from __future__ import annotations

import pytest
from sqlmodel import select

from guard.access.roles import Role
from guard.access.tokens import create_token, list_tokens, revoke_token, role_of, verify_token
from guard.config import Settings
from guard.incidents.authz import Actor, NotAuthorised
from guard.incidents.commands import queue_command
from guard.notify.authz import gate_from_settings
from guard.store.db import open_database
from guard.store.models import AccessToken, HumanCommand
from tests.agent_helpers import stored_incident
from tests.pg_server import fresh_database


def test_tokens_and_the_gate_on_postgres(postgres_url: str) -> None:
    db = open_database(fresh_database(postgres_url))
    try:
        with db.session() as s:
            incident_id = stored_incident(s).id
        viewer = create_token(db, "viewer-bot", Role.viewer)
        create_token(db, "approver-bot", Role.approver)
        with db.session() as s:
            digests = [t.digest for t in s.exec(select(AccessToken))]
        assert viewer not in digests and len(digests) == 2
        info = verify_token(db, viewer)
        assert info is not None and info.role is Role.viewer
        assert role_of(db, "approver-bot") is Role.approver

        gate = gate_from_settings(Settings(), db)
        with pytest.raises(NotAuthorised, match="needs approver; you are viewer"):
            queue_command(
                db,
                incident_id=incident_id,
                verb="approve",
                actor=Actor("token", "viewer-bot"),
                gate=gate,
            )
        cmd = queue_command(
            db,
            incident_id=incident_id,
            verb="deny",
            actor=Actor("token", "approver-bot"),
            gate=gate,
        )
        assert cmd.actor == "token:approver-bot"

        assert revoke_token(db, "approver-bot")
        assert role_of(db, "approver-bot") is None
        with pytest.raises(NotAuthorised, match="no live token named approver-bot"):
            queue_command(
                db,
                incident_id=incident_id,
                verb="deny",
                actor=Actor("token", "approver-bot"),
                gate=gate,
            )
        with db.session() as s:
            assert len(s.exec(select(HumanCommand)).all()) == 1
        assert [t.name for t in list_tokens(db) if t.revoked_at] == ["approver-bot"]
    finally:
        db.dispose()
