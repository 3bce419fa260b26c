"""``TelegramNotifier``: the outbox's ``ChannelNotifier`` for the configured chat, in HTML."""

from __future__ import annotations

from guard.config import Settings
from guard.notify.fanout import ChannelNotifier
from guard.notify.telegram.channel import NAME
from guard.notify.telegram.markup import HtmlMarkup
from guard.store.db import Database


class TelegramNotifier(ChannelNotifier):
    def __init__(self, settings: Settings, db: Database) -> None:
        assert settings.telegram.chat_id is not None
        super().__init__(db, NAME, settings.telegram.chat_id, HtmlMarkup())
