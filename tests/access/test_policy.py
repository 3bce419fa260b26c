"""The role policy: every role against every verb, who has which role (config, tokens, the CLI),
and refusals through the one entry (``queue_command``): named, audited once, nothing queued."""

from __future__ import annotations

from pathlib import Path

import pytest

from guard.access.policy import RolePolicy
from guard.access.roles import NEEDS, Role
from guard.access.tokens import create_token, revoke_token
from guard.config import Settings
from guard.incidents.gate import Actor, Allowed, Refused
from guard.notify.running_gate import gate_from_settings
from guard.store.db import Database, open_database
from tests.access.queue_checks import tokens_at_the_queue

pytestmark = pytest.mark.unit

ROLES = {"1": Role.viewer, "2": Role.operator, "3": Role.approver, "4": Role.admin}


@pytest.fixture
def db(tmp_path: Path) -> Database:
    return open_database(f"sqlite:///{tmp_path / 'guard.db'}")


@pytest.mark.parametrize("verb", sorted(NEEDS))
@pytest.mark.parametrize("user", sorted(ROLES))
def test_the_matrix(user: str, verb: str) -> None:
    policy = RolePolicy({"telegram": ROLES})
    role, need = ROLES[user], NEEDS[verb]
    decision = policy.decide(Actor("telegram", user), verb, None)
    if role >= need:
        assert decision == Allowed(by=f"role {role.name}")
    else:
        assert decision == Refused(f"needs {need.name}; you are {role.name}")


def test_the_refusal_names_the_missing_role() -> None:
    policy = RolePolicy({"telegram": ROLES})
    viewer = Actor("telegram", "1")
    assert policy.decide(viewer, "approve", None) == Refused("needs approver; you are viewer")
    assert policy.decide(viewer, "mute", None) == Refused("needs operator; you are viewer")
    assert policy.decide(Actor("telegram", "3"), "trust", None) == Refused(
        "needs admin; you are approver"
    )


def test_unknown_actors_are_left_to_the_next_policy() -> None:
    policy = RolePolicy({"telegram": ROLES})
    assert policy.decide(Actor("telegram", "99"), "view", None) is None
    assert policy.decide(Actor("chat", "1"), "view", None) is None


def test_the_cli_is_admin() -> None:
    decision = RolePolicy().decide(Actor("cli", "ann"), "quarantine", None)
    assert decision == Allowed(by="role admin (trusted channel cli)")


def test_settings_give_each_telegram_id_its_role() -> None:
    settings = Settings(
        telegram={"allowed_user_ids": [10, 11]},
        access={"telegram": {11: "viewer", 12: "operator"}},
    )
    gate = gate_from_settings(settings)
    # only in allowed_user_ids: an approver, as before roles
    assert isinstance(gate.authorise(Actor("telegram", "10"), "reply", None), Allowed)
    assert isinstance(gate.authorise(Actor("telegram", "10"), "trust", None), Refused)
    # access.telegram wins over the allowlist
    assert gate.authorise(Actor("telegram", "11"), "approve", None) == Refused(
        "needs approver; you are viewer"
    )
    assert isinstance(gate.authorise(Actor("telegram", "11"), "view", None), Allowed)
    # a role without the allowlist
    assert isinstance(gate.authorise(Actor("telegram", "12"), "mute", None), Allowed)
    # a stranger: refused by the allowlist as before
    assert gate.authorise(Actor("telegram", "13"), "view", None) == Refused(
        "you are not on this Guard's allowlist"
    )


def test_a_token_has_its_stored_role_until_revoked(db: Database) -> None:
    gate = gate_from_settings(Settings(), db)
    create_token(db, "ci", Role.operator)
    ci = Actor("token", "ci")
    assert gate.authorise(ci, "mute", None) == Allowed(by="role operator")
    assert gate.authorise(ci, "approve", None) == Refused("needs approver; you are operator")
    revoke_token(db, "ci")
    assert gate.authorise(ci, "view", None) == Refused(
        "no live token named ci (unknown or revoked)"
    )
    assert isinstance(gate.authorise(Actor("token", "nobody"), "view", None), Refused)
    # without a store to read, no token is believed
    assert isinstance(gate_from_settings(Settings()).authorise(ci, "view", None), Refused)


def test_refusals_at_the_one_entry_are_audited_once_and_queue_nothing(db: Database) -> None:
    tokens_at_the_queue(db)
