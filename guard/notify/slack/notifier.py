"""``SlackNotifier``: the outbox's ``ChannelNotifier`` for the Slack channels, in mrkdwn:
``slack.channel`` is the default; with a ``Router`` an incident's question goes to the channels
its routes name (``routes[].chats: {slack: C0SHOP}``, ``guard.notify.routing.chats_for``).

Tested by tests/notify/test_slack_gateway.py.
"""

from __future__ import annotations

from guard.config import Settings
from guard.notify.fanout import ChannelNotifier
from guard.notify.routing import Router, chats_for
from guard.notify.slack.channel import NAME
from guard.notify.slack.markup import SlackMarkup
from guard.store.db import Database


class SlackNotifier(ChannelNotifier):
    def __init__(self, settings: Settings, db: Database, router: Router | None = None) -> None:
        assert settings.slack.channel is not None
        chats = chats_for(router, db, NAME)
        super().__init__(db, NAME, settings.slack.channel, SlackMarkup(), chats)
