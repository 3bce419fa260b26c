"""Telegram's senders at the gate: an update is authorised by its ``from.id``
(``telegram:<id>``), through the channel-neutral ``guard.notify.answers.senders.Authoriser``."""

from __future__ import annotations

from guard.config import TelegramSettings
from guard.incidents.gate import Actor, Gate
from guard.notify.answers import senders
from guard.notify.running_gate import allowlist_gate
from guard.notify.telegram.channel import NAME
from guard.store.db import Database

__all__ = ["Authoriser", "telegram_actor"]


def telegram_actor(user_id: int | None) -> Actor:
    return senders.actor(NAME, user_id)


class Authoriser(senders.Authoriser):
    def __init__(self, settings: TelegramSettings, db: Database, gate: Gate | None = None) -> None:
        super().__init__(NAME, db, gate or allowlist_gate({NAME: settings}))
