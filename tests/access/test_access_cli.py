"""``guard access token create|list|revoke`` as a user runs them, in subprocesses."""

from __future__ import annotations

import getpass

from sqlmodel import col, select

from guard.access.roles import Role
from guard.access.tokens import verify_token
from guard.store.models import AuditEntry
from tests.conftest import GuardHome


def test_create_prints_the_token_once_on_the_last_line_then_list_and_revoke(
    home: GuardHome,
) -> None:
    created = home.cli("access", "token", "create", "deploy-bot", "--role", "approver")
    lines = created.stdout.splitlines()
    secret = lines[-1]
    assert secret.startswith("gat_") and secret == secret.strip() and " " not in secret
    assert created.stdout.count(secret) == 1 and secret not in created.stderr
    db = home.database()
    info = verify_token(db, secret)
    assert info is not None and (info.name, info.role) == ("deploy-bot", Role.approver)

    listed = home.cli("access", "list")
    header, row = listed.stdout.splitlines()
    assert header.split() == ["name", "role", "created", "last", "used", "revoked"]
    assert row.split()[:2] == ["deploy-bot", "approver"]
    assert row.split()[-1] == "-"  # not revoked
    assert secret not in listed.stdout and secret[4:] not in listed.stdout

    revoked = home.cli("access", "revoke", "deploy-bot")
    assert "revoked token deploy-bot" in revoked.stdout
    assert verify_token(db, secret) is None  # at once
    assert home.cli("access", "list").stdout.splitlines()[1].split()[-1] != "-"

    with db.session() as s:
        rows = s.exec(select(AuditEntry).order_by(col(AuditEntry.seq))).all()
    assert [(r.actor, r.action) for r in rows] == [
        (f"cli:{getpass.getuser()}", "access.token_created"),
        (f"cli:{getpass.getuser()}", "access.token_revoked"),
    ]


def test_bad_input_is_refused_with_its_reason(home: GuardHome) -> None:
    bad_role = home.cli("access", "token", "create", "x", "--role", "root", check=False)
    assert bad_role.returncode == 2
    assert "--role: unknown role 'root': one of viewer, operator, approver, admin" in (
        bad_role.stderr
    )
    assert "gat_" not in bad_role.stdout
    home.cli("access", "token", "create", "x", "--role", "viewer")
    again = home.cli("access", "token", "create", "x", "--role", "admin", check=False)
    assert again.returncode == 1 and "a token named 'x' exists" in again.stderr
    assert "gat_" not in again.stdout
    missing = home.cli("access", "revoke", "nobody", check=False)
    assert missing.returncode == 1 and "no live token named 'nobody'" in missing.stderr


def test_list_with_no_tokens_says_how_to_make_one(home: GuardHome) -> None:
    assert "guard access token create NAME --role ROLE" in home.cli("access", "list").stdout
