"""``EmailNotifier``: the outbox's ``ChannelNotifier`` for mail. ``email.to`` is the default
recipient; with a ``Router`` an incident's question goes to the addresses its route names
(``routes[].email``), its related signals' routes included. Tested by
tests/notify/email/test_email_channel.py."""

from __future__ import annotations

from guard.config import Settings
from guard.notify.email.channel import NAME
from guard.notify.email.markup import EmailMarkup
from guard.notify.fanout import ChannelNotifier
from guard.notify.routing import Router
from guard.store.db import Database
from guard.store.models import Incident
from guard.triage.correlation import related_of


class EmailNotifier(ChannelNotifier):
    def __init__(self, settings: Settings, db: Database, router: Router | None = None) -> None:
        assert settings.email.to is not None

        def chats_for(incident: Incident) -> list[str]:
            if router is None or incident.id is None:
                return []
            with db.session() as session:
                related = related_of(session, incident.id)
            return router.route(incident, related, NAME).chats

        super().__init__(db, NAME, settings.email.to, EmailMarkup(), chats_for)
