"""The gate Guard runs with, built from its settings (the layer below never reads them).

Its policies, in order: the role policy (``guard.access.policy.RolePolicy``: ``access.<channel>``
gives a chat user id its role, an id only in ``<channel>.allowed_user_ids`` is an approver, a
token has its stored role, the CLI is admin), then the allowlist, which refuses everyone else
as before. The chat channels are the ``CHANNELS`` table's (``guard.notify.kinds``). ``guard
run``, every ``guard`` verb that queues a human command, and every later entry (web, MCP) build
it here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from guard.access.policy import RolePolicy
from guard.access.roles import Role
from guard.config import AccessSettings, Settings
from guard.incidents.gate import AllowlistPolicy, Gate
from guard.notify.kinds import CHANNELS, section
from guard.store.db import Database


def gate_from_settings(settings: Settings, db: Database | None = None) -> Gate:
    """The gate; with ``db``, token actors get their stored role (without it they are refused)."""
    sections = {name: section(settings, name) for name in CHANNELS}
    return allowlist_gate(sections, settings.access, db)


def allowlist_gate(
    sections: Mapping[str, Any], access: AccessSettings | None = None, db: Database | None = None
) -> Gate:
    """Roles first, then the allowlist, from each chat channel's section (by channel name: its
    ``allowed_user_ids``) and the access section (``access.<channel>``)."""
    roles: dict[str, dict[str, Role]] = {}
    allowed: dict[str, set[str]] = {}
    for name, chat in sections.items():
        allowed[name] = {str(user) for user in chat.allowed_user_ids}
        roles[name] = dict.fromkeys(allowed[name], Role.approver)
        given = getattr(access, name, None) or {}
        roles[name].update({str(user): Role[role] for user, role in given.items()})
    sources = {name: f"{name}.allowed_user_ids" for name in sections}
    return Gate([RolePolicy(roles, tokens=db), AllowlistPolicy(allowed, sources=sources)])
