"""``EmailNotifier``: the outbox's ``ChannelNotifier`` for mail. ``email.to`` is the default
recipient; with a ``Router`` an incident's question goes to the addresses its routes name in
email (``routes[].chats.email``, or ``routes[].email``; ``guard.notify.routing.chats_for``),
its related signals' routes included. Tested by tests/notify/email/test_email_channel.py."""

from __future__ import annotations

from guard.config import Settings
from guard.notify.email.channel import NAME
from guard.notify.email.markup import EmailMarkup
from guard.notify.fanout import ChannelNotifier
from guard.notify.routing import Router, chats_for
from guard.store.db import Database


class EmailNotifier(ChannelNotifier):
    def __init__(self, settings: Settings, db: Database, router: Router | None = None) -> None:
        assert settings.email.to is not None
        chats = chats_for(router, db, NAME)
        super().__init__(db, NAME, settings.email.to, EmailMarkup(), chats)
