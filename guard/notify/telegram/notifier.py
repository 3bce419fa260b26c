"""``TelegramNotifier``: the outbox's ``ChannelNotifier`` for the configured chats, in HTML.

``telegram.chat_id`` is the default chat; with a ``Router`` an incident's question goes to the
chats its routes name in Telegram (``routes[].chats.telegram``, ``guard.notify.routing.chats_for``),
each chat with its own outbox rows."""

from __future__ import annotations

from guard.config import Settings
from guard.notify.fanout import ChannelNotifier
from guard.notify.routing import Router, chats_for
from guard.notify.telegram.channel import NAME
from guard.notify.telegram.markup import HtmlMarkup
from guard.store.db import Database


class TelegramNotifier(ChannelNotifier):
    def __init__(self, settings: Settings, db: Database, router: Router | None = None) -> None:
        assert settings.telegram.chat_id is not None
        chats = chats_for(router, db, NAME)
        super().__init__(db, NAME, settings.telegram.chat_id, HtmlMarkup(), chats)
