"""What the answers policy uses of a channel's runner (its gateway), typed here so the policy
does not import the runner that builds it.

Tested through every channel by tests/notify/test_inbound_contract.py.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Protocol

from sqlmodel import Session

from guard.config import Settings
from guard.notify.answers.senders import Authoriser
from guard.notify.fanout import ChannelNotifier
from guard.ports.running import HealthSource
from guard.store.db import Database


class GatewayPort(Protocol):
    settings: Settings
    db: Database
    chat_id: str  # the channel's default chat
    auth: Authoriser
    notifier: ChannelNotifier
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
