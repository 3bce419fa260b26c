"""The console's parts of the conversation port, as ``guard.notify.kinds.CHANNELS`` finds them
(``ChannelPlug``): the channel when no other is configured (``console.always``: beside them).
Its inbound adapter is ``guard.notify.console.inbound``. Tested by tests/notify/test_kinds.py."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from guard.notify.console.markup import ConsoleMarkup

if TYPE_CHECKING:
    from guard.config import Settings
    from guard.notify.base import Notifier
    from guard.notify.channel import Channel
    from guard.notify.console.notifier import ConsoleRunner
    from guard.notify.inbound import Inbound
    from guard.notify.routing import Router
    from guard.ports.running import HealthSource
    from guard.store.db import Database

__all__ = ["channel", "inbound", "markup", "notifier", "report", "runner"]


def channel(settings: Settings) -> Channel:
    """A ``ConsoleChannel`` recording in the configured store."""
    from guard.notify.console.channel import ConsoleChannel
    from guard.store.db import open_database

    return ConsoleChannel(open_database(settings.database_url), settings.public_url)


def markup() -> ConsoleMarkup:
    return ConsoleMarkup()


def inbound(update: Any) -> Inbound | None:
    """A line typed at the console (``(line, user, update_id)``) as a neutral event."""
    from guard.notify.console.inbound import event

    line, user, update_id = update
    return event(line, user, update_id)


def notifier(settings: Settings, db: Database, router: Router | None) -> Notifier:
    from guard.notify.console.notifier import ConsoleNotifier

    c = settings.console
    return ConsoleNotifier(db, router, chat_id=str(c.chat_id), public_url=settings.public_url)


def runner(settings: Settings, db: Database, runtime: HealthSource | None) -> ConsoleRunner:
    from guard.notify.console.notifier import ConsoleNotifier, ConsoleRunner

    c, url = settings.console, settings.public_url
    own = ConsoleNotifier(db, chat_id=str(c.chat_id), public_url=url)
    return ConsoleRunner(db, own, group_wait=c.group_wait, public_url=url or "")


def report(settings: Settings, db: Database, text: str, png: bytes) -> str:
    from guard.notify.outbox import queue

    call = {"method": "send", "chat_id": str(settings.console.chat_id), "text": text}
    queue.enqueue_all(db, "console", [{**call, "role": "report"}])
    return "report queued for the console; `guard run` writes it to its log"
