"""Email's parts of the conversation port, as ``guard.notify.kinds.CHANNELS`` finds them: a
notifying channel, so it has no inbound half (its questions are answered in the web console).
Tested by tests/notify/email/test_email_channel.py."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from guard.notify.email.markup import EmailMarkup

if TYPE_CHECKING:
    from guard.config import Settings
    from guard.notify.base import Notifier
    from guard.notify.channel import Channel
    from guard.notify.email.runner import EmailRunner
    from guard.notify.inbound import Inbound
    from guard.notify.routing import Router
    from guard.ports.running import HealthSource
    from guard.store.db import Database

__all__ = ["channel", "inbound", "markup", "notifier", "report", "runner"]


def channel(settings: Settings) -> Channel:
    """An ``EmailChannel`` on the ``email`` section, its journal in the configured store."""
    from guard.notify.email.channel import EmailChannel
    from guard.store.db import open_database

    return EmailChannel(settings.email, open_database(settings.database_url))


def markup() -> EmailMarkup:
    return EmailMarkup()


def inbound(update: Any) -> Inbound | None:
    """Nothing comes in by mail: answers are given in the console."""
    return None


def notifier(settings: Settings, db: Database, router: Router | None) -> Notifier:
    from guard.notify.email.notifier import EmailNotifier

    return EmailNotifier(settings, db, router)


def runner(settings: Settings, db: Database, runtime: HealthSource | None) -> EmailRunner:
    from guard.notify.email.runner import EmailRunner

    return EmailRunner(settings, db)


def report(settings: Settings, db: Database, text: str, png: bytes) -> str:
    from guard.notify.email import outbox

    outbox.queue_report(settings, db, text, png)
    return f"report queued for email to {settings.email.to}; `guard run` sends it"
