"""Notifiers: the Notifier port, the channel-neutral outbox behind it, and its channels.

``build_notifier`` returns a ``FanOut`` over every configured channel (today Telegram, when a
bot token and a chat id are configured); with none configured, the console. ``build_gateway``
returns the Telegram gateway for ``guard run`` (or None). Telegram's modules are imported only
when configured (they cost start-up time).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guard.notify.base import HumanRequest, IncidentUpdate, Notifier, SkillOption

if TYPE_CHECKING:
    from guard.config import Settings
    from guard.notify.telegram.gateway import TelegramGateway
    from guard.runtime import HealthSource
    from guard.store.db import Database


def channel_notifiers(settings: Settings, db: Database) -> list[Notifier]:
    """A notifier per configured chat channel."""
    found: list[Notifier] = []
    if settings.telegram.configured:
        from guard.notify.telegram.notifier import TelegramNotifier

        found.append(TelegramNotifier(settings, db))
    return found


def build_notifier(settings: Settings, db: Database) -> Notifier:
    if found := channel_notifiers(settings, db):
        from guard.notify.fanout import FanOut

        return FanOut(found)
    from guard.notify.console import ConsoleNotifier

    return ConsoleNotifier(db, group_wait=settings.telegram.group_wait)


def build_gateway(
    settings: Settings, db: Database, runtime: HealthSource | None = None
) -> TelegramGateway | None:
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
