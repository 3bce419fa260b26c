"""Slack's parts of the conversation port, as ``guard.notify.kinds.CHANNELS`` finds them
(``ChannelPlug``): its channel, markup, notifier, inbound adapter and runner (the gateway).
Tested by tests/notify/test_slack_channel.py and the contract suites."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from guard.notify.slack.markup import SlackMarkup

if TYPE_CHECKING:
    from guard.config import Settings
    from guard.notify.base import Notifier
    from guard.notify.channel import Channel
    from guard.notify.inbound import Inbound
    from guard.notify.routing import Router
    from guard.notify.slack.gateway import SlackGateway
    from guard.ports.running import HealthSource
    from guard.store.db import Database

__all__ = ["channel", "inbound", "markup", "notifier", "report", "runner"]


def channel(settings: Settings) -> Channel:
    """A ``SlackChannel`` on ``slack.bot_token`` at ``slack.api_base_url``."""
    from guard.notify.slack.channel import SlackChannel, client

    sl = settings.slack
    assert sl.bot_token is not None
    return SlackChannel(client(sl.bot_token.get_secret_value(), sl.api_base_url))


def markup() -> SlackMarkup:
    return SlackMarkup()


def inbound(update: Any) -> Inbound | None:
    """A ``Delivery`` (a Socket Mode envelope's type and payload) as a neutral event."""
    from guard.notify.slack.updates import event

    return event(update)


def notifier(settings: Settings, db: Database, router: Router | None) -> Notifier:
    from guard.notify.slack.notifier import SlackNotifier

    return SlackNotifier(settings, db, router)


def runner(settings: Settings, db: Database, runtime: HealthSource | None) -> SlackGateway:
    from guard.notify.slack.gateway import SlackGateway

    return SlackGateway(settings, db, runtime)


def report(settings: Settings, db: Database, text: str, png: bytes) -> str:
    from guard.notify.outbox import queue
    from guard.notify.slack.gateway import report_calls

    queue.enqueue_all(db, "slack", report_calls(str(settings.slack.channel), text))
    return "report queued for Slack; `guard run` sends it"
