"""What both stores (SQLite and PostgreSQL) must show of tokens at the one entry for commands."""

from __future__ import annotations

import pytest
from sqlmodel import select

from guard.access.roles import Role
from guard.access.tokens import create_token, revoke_token
from guard.config import Settings
from guard.incidents.commands import queue_command
from guard.incidents.gate import Actor, Gate, NotAuthorised
from guard.notify.running_gate import gate_from_settings
from guard.store.db import Database
from guard.store.models import AuditEntry, HumanCommand
from tests.helpers.agent import stored_incident


def as_token(db: Database, gate: Gate, incident_id: int, name: str, verb: str) -> HumanCommand:
    return queue_command(
        db, incident_id=incident_id, verb=verb, actor=Actor("token", name), gate=gate
    )


def tokens_at_the_queue(db: Database) -> None:
    """A viewer token's approval is refused naming the role, audited once, nothing queued; an
    approver token's is queued; once revoked it is refused at once. The gate reads the token's
    role while ``queue_command`` holds its write transaction."""
    with db.session() as s:
        incident_id = stored_incident(s).id
    create_token(db, "viewer-bot", Role.viewer)
    create_token(db, "approver-bot", Role.approver)
    gate = gate_from_settings(Settings(), db)
    with pytest.raises(NotAuthorised, match="needs approver; you are viewer"):
        as_token(db, gate, incident_id, "viewer-bot", "approve")
    cmd = as_token(db, gate, incident_id, "approver-bot", "approve")
    assert revoke_token(db, "approver-bot")
    with pytest.raises(NotAuthorised, match="no live token named approver-bot"):
        as_token(db, gate, incident_id, "approver-bot", "deny")
    with db.session() as s:
        commands = s.exec(select(HumanCommand)).all()
        refused = s.exec(select(AuditEntry).where(AuditEntry.action == "human.refused")).all()
        approved = s.exec(select(AuditEntry).where(AuditEntry.action == "human.approve")).all()
    assert [c.id for c in commands] == [cmd.id] and cmd.actor == "token:approver-bot"
    assert [(r.actor, r.data["reason"]) for r in refused] == [
        ("token:viewer-bot", "needs approver; you are viewer"),
        ("token:approver-bot", "no live token named approver-bot (unknown or revoked)"),
    ]
    assert [(r.actor, r.data["allowed"]) for r in approved] == [
        ("token:approver-bot", "role approver")
    ]
