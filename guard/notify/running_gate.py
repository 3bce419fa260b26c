"""The gate Guard runs with, built from its settings (the layer below never reads them).

Its policies, in order: the role policy (``guard.access.policy.RolePolicy``: ``access.telegram``
gives a Telegram id its role, an id only in ``telegram.allowed_user_ids`` is an approver, a
token has its stored role, the CLI is admin), then the allowlist, which refuses everyone else
as before. ``guard run``, every ``guard`` verb that queues a human command, and every later
entry (web, MCP) build it here.
"""

from __future__ import annotations

from guard.access.policy import RolePolicy
from guard.access.roles import Role
from guard.config import AccessSettings, Settings, TelegramSettings
from guard.incidents.gate import AllowlistPolicy, Gate
from guard.store.db import Database


def gate_from_settings(settings: Settings, db: Database | None = None) -> Gate:
    """The gate; with ``db``, token actors get their stored role (without it they are refused)."""
    return allowlist_gate(settings.telegram, settings.access, db)


def allowlist_gate(
    telegram: TelegramSettings, access: AccessSettings | None = None, db: Database | None = None
) -> Gate:
    """Roles first, then the allowlist, from the Telegram and access sections."""
    roles = {str(user): Role.approver for user in telegram.allowed_user_ids}
    if access is not None:
        roles.update({str(user): Role[name] for user, name in access.telegram.items()})
    allowlist = AllowlistPolicy(
        {"telegram": {str(user) for user in telegram.allowed_user_ids}},
        sources={"telegram": "telegram.allowed_user_ids"},
    )
    return Gate([RolePolicy({"telegram": roles}, tokens=db), allowlist])
