"""Matrix's parts of the conversation port, as ``guard.notify.kinds.CHANNELS`` finds them
(``ChannelPlug``): its channel, markup, notifier, inbound adapter and runner (the gateway).
Tested by tests/notify/test_kinds.py and tests/notify/test_inbound_contract.py."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from guard.notify.matrix.markup import MatrixMarkup

if TYPE_CHECKING:
    from guard.config import Settings
    from guard.notify.base import Notifier
    from guard.notify.channel import Channel
    from guard.notify.inbound import Inbound
    from guard.notify.matrix.gateway import MatrixGateway
    from guard.ports.running import HealthSource
    from guard.store.db import Database

__all__ = ["channel", "inbound", "markup", "notifier", "report", "runner"]


def channel(settings: Settings) -> Channel:
    """A ``MatrixChannel`` on the bot's account at ``matrix.homeserver``."""
    from guard.notify.matrix.channel import MatrixChannel
    from guard.notify.matrix.gateway import client

    return MatrixChannel(client(settings))  # type: ignore[return-value]


def markup() -> MatrixMarkup:
    return MatrixMarkup()


def inbound(update: Any) -> Inbound | None:
    """A ``MatrixUpdate`` (a room event and the buttons it answers) as a neutral event."""
    from guard.notify.matrix.updates import event

    return event(update)


def notifier(settings: Settings, db: Database, router: Any) -> Notifier:
    from guard.notify.matrix.notifier import MatrixNotifier

    return MatrixNotifier(settings, db, router)


def runner(settings: Settings, db: Database, runtime: HealthSource | None) -> MatrixGateway:
    from guard.notify.matrix.gateway import MatrixGateway

    return MatrixGateway(settings, db, runtime)


def report(settings: Settings, db: Database, text: str, png: bytes) -> str:
    from guard.notify.matrix.gateway import report_calls
    from guard.notify.outbox import queue

    assert settings.matrix.room_id is not None
    queue.enqueue_all(db, "matrix", report_calls(settings.matrix.room_id, text, png))
    return "report queued for Matrix; `guard run` sends it"
