"""Telegram's incoming updates handled once (``guard.notify.inbound``, bound to this channel).

Telegram redelivers every update that ``getUpdates`` has not confirmed yet (the next poll's
``offset`` confirms it), and keeps an unconfirmed update for 24 hours.
"""

from __future__ import annotations

from sqlmodel import Session

from guard.notify import inbound
from guard.notify.telegram.channel import NAME
from guard.store.db import Database

KEEP = inbound.KEEP


class Handled(inbound.Handled):
    def __init__(self, update_id: int, chat_id: int | str | None, message_id: int | None) -> None:
        super().__init__(NAME, update_id, chat_id, message_id)


def seen(db: Database, update_id: int) -> bool:
    return inbound.seen(db, NAME, update_id)


def raise_top(session: Session, chat_id: str, message_id: int) -> None:
    inbound.raise_top(session, NAME, chat_id, message_id)


def top(session: Session, chat_id: str) -> int:
    return inbound.top(session, NAME, chat_id)
