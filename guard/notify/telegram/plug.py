"""Telegram's parts of the conversation port, as ``guard.notify.kinds.CHANNELS`` finds them
(``ChannelPlug``): its channel, markup, notifier, inbound adapter and runner (the gateway).
Tested by tests/notify/test_kinds.py."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from guard.notify.telegram.markup import HtmlMarkup

if TYPE_CHECKING:
    from guard.config import Settings
    from guard.notify.base import Notifier
    from guard.notify.channel import Channel
    from guard.notify.inbound import Inbound
    from guard.notify.routing import Router
    from guard.notify.telegram.gateway import TelegramGateway
    from guard.ports.running import HealthSource
    from guard.store.db import Database

__all__ = ["channel", "inbound", "markup", "notifier", "report", "runner"]


def channel(settings: Settings) -> Channel:
    """A ``TelegramChannel`` on a bot for ``telegram.bot_token`` at ``telegram.api_base_url``."""
    from telegram import Bot

    from guard.notify.telegram.channel import TelegramChannel

    tg = settings.telegram
    assert tg.bot_token is not None
    base = tg.api_base_url.rstrip("/")
    return TelegramChannel(Bot(tg.bot_token.get_secret_value(), base_url=f"{base}/bot"))


def markup() -> HtmlMarkup:
    return HtmlMarkup()


def inbound(update: Any) -> Inbound:
    """A python-telegram-bot ``Update`` as a neutral event."""
    from guard.notify.telegram.updates import event

    return event(update)


def notifier(settings: Settings, db: Database, router: Router | None) -> Notifier:
    from guard.notify.telegram.notifier import TelegramNotifier

    return TelegramNotifier(settings, db, router)


def runner(settings: Settings, db: Database, runtime: HealthSource | None) -> TelegramGateway:
    from guard.notify.telegram.gateway import TelegramGateway

    return TelegramGateway(settings, db, runtime)


def report(settings: Settings, db: Database, text: str, png: bytes) -> str:
    from guard.notify.telegram import outbox

    outbox.enqueue_all(db, outbox.report_calls(str(settings.telegram.chat_id), text, png))
    return "report queued for Telegram; `guard run` sends it"
