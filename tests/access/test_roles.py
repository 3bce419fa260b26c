"""The roles' order and the role each verb needs."""

from __future__ import annotations

import pytest

from guard.access.roles import NEEDS, ROLE_NAMES, Role, needed

pytestmark = pytest.mark.unit


def test_each_role_includes_the_one_before_it() -> None:
    assert Role.viewer < Role.operator < Role.approver < Role.admin
    assert ROLE_NAMES == ("viewer", "operator", "approver", "admin")


@pytest.mark.parametrize(
    ("verb", "role"),
    [
        ("view", Role.viewer),
        ("ack", Role.operator),
        ("mute", Role.operator),
        ("unmute", Role.operator),
        ("report", Role.operator),
        ("diagnose", Role.operator),
        ("approve", Role.approver),
        ("deny", Role.approver),
        ("reply", Role.approver),
        ("fix", Role.approver),
        ("trust", Role.admin),
        ("distrust", Role.admin),
        ("quarantine", Role.admin),
        ("token", Role.admin),
    ],
)
def test_needed(verb: str, role: Role) -> None:
    assert needed(verb) is role


def test_a_verb_no_one_named_needs_admin() -> None:
    assert "rm -rf" not in NEEDS
    assert needed("rm -rf") is Role.admin
    assert needed("") is Role.admin


def test_parse_names_the_roles_on_a_typo() -> None:
    assert Role.parse(" Approver ") is Role.approver
    with pytest.raises(ValueError, match="unknown role 'aprover': one of viewer, operator"):
        Role.parse("aprover")
