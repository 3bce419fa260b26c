"""What the handlers and the message sync use of the gateway (``TelegramGateway``), typed here so
they do not import the gateway that builds them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Protocol

from sqlmodel import Session

from guard.config import Settings
from guard.notify.telegram.notifier import TelegramNotifier
from guard.notify.telegram.senders import Authoriser
from guard.ports.running import HealthSource
from guard.store.db import Database


class GatewayPort(Protocol):
    settings: Settings
    db: Database
    chat_id: str
    auth: Authoriser
    notifier: TelegramNotifier
    runtime: HealthSource | None

    async def send_report(
        self,
        chat_id: str | None = None,
        day: date | None = None,
        also: Callable[[Session], object] | None = None,
    ) -> None:
        """Send the daily report (today's by default) to ``chat_id`` (default: the chat);
        ``also`` runs in the transaction that queues it."""
        ...
