"""``TelegramNotifier``: the outbox's ``ChannelNotifier`` for the configured chats, in HTML.

``telegram.chat_id`` is the default chat; with a ``Router`` an incident's question goes to the
chats its route names (``routes[].telegram_chat``), its related signals' routes included, each
chat with its own outbox rows."""

from __future__ import annotations

from guard.config import Settings
from guard.notify.fanout import ChannelNotifier
from guard.notify.routing import Router
from guard.notify.telegram.channel import NAME
from guard.notify.telegram.markup import HtmlMarkup
from guard.store.db import Database
from guard.store.models import Incident
from guard.triage.correlation import related_of


class TelegramNotifier(ChannelNotifier):
    def __init__(self, settings: Settings, db: Database, router: Router | None = None) -> None:
        assert settings.telegram.chat_id is not None
        self.router = router

        def chats_for(incident: Incident) -> list[str]:
            if router is None or incident.id is None:
                return []
            with db.session() as session:
                related = related_of(session, incident.id)
            return router.route(incident, related).chats_in(NAME)

        super().__init__(db, NAME, settings.telegram.chat_id, HtmlMarkup(), chats_for)
