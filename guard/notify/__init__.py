"""Notifiers: the Notifier port and its implementations (console; Telegram in notify/telegram).

``build_notifier`` picks one from the settings: Telegram when a bot token and a chat id are
configured, else the console. ``build_gateway`` returns the Telegram gateway for ``guard run``
(or None). Telegram's modules are imported only when configured (they cost start-up time).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from guard.notify.base import HumanRequest, IncidentUpdate, Notifier, SkillOption

if TYPE_CHECKING:
    from guard.config import Settings
    from guard.notify.telegram.gateway import TelegramGateway
    from guard.store.db import Database


def build_notifier(settings: Settings, db: Database) -> Notifier:
    if settings.telegram.configured:
        from guard.notify.telegram.notifier import TelegramNotifier

        return TelegramNotifier(settings, db)
    from guard.notify.console import ConsoleNotifier

    return ConsoleNotifier(db, group_wait=settings.telegram.group_wait)


def build_gateway(settings: Settings, db: Database, runtime: Any = None) -> TelegramGateway | None:
    if not settings.telegram.configured:
        return None
    from guard.notify.telegram.gateway import TelegramGateway

    return TelegramGateway(settings, db, runtime)


__all__ = [
    "HumanRequest",
    "IncidentUpdate",
    "Notifier",
    "SkillOption",
    "build_gateway",
    "build_notifier",
]
