"""The gate Guard runs with, built from its settings (the layer below never reads them).

Today's gate is the allowlist alone: a chat user may act iff their id is in
``telegram.allowed_user_ids``; the CLI is trusted (shell access to the box is the boundary).
``guard run`` and every ``guard`` verb that queues a human command build it here.
"""

from __future__ import annotations

from guard.config import Settings, TelegramSettings
from guard.incidents.authz import Gate, default_gate


def gate_from_settings(settings: Settings) -> Gate:
    return allowlist_gate(settings.telegram)


def allowlist_gate(telegram: TelegramSettings) -> Gate:
    """The allowlist as the gate's first policy, from the Telegram section alone."""
    return default_gate(
        {"telegram": {str(user) for user in telegram.allowed_user_ids}},
        sources={"telegram": "telegram.allowed_user_ids"},
    )
