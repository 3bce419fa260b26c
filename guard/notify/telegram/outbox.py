"""Telegram's rows in the durable outbox (``guard.notify.outbox``): its queue API bound to the
``telegram`` channel, and its worker sending through ``TelegramChannel``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlmodel import Session
from telegram import Bot

from guard.notify.outbox import queue
from guard.notify.outbox import worker as _worker
from guard.notify.outbox.queue import LOW_PRIORITY, claim_send, remember
from guard.notify.telegram.channel import NAME, TelegramChannel
from guard.notify.telegram.messages import REPORT_POINTER, cut
from guard.store.db import Database
from guard.store.models import ChannelMessage, OutboxMessage

__all__ = [
    "LOW_PRIORITY",
    "OutboxWorker",
    "add",
    "claim_send",
    "close_question",
    "close_question_in",
    "enqueue",
    "enqueue_all",
    "incident_message",
    "pending",
    "remember",
    "report_calls",
]


def enqueue(db: Database, **call: Any) -> int:
    return queue.enqueue(db, NAME, **call)


def enqueue_all(
    db: Database, calls: list[dict[str, Any]], also: Callable[[Session], object] | None = None
) -> list[int]:
    return queue.enqueue_all(db, NAME, calls, also)


def close_question(db: Database, **kw: Any) -> int | None:
    return queue.close_question(db, NAME, **kw)


def close_question_in(session: Session, **kw: Any) -> tuple[OutboxMessage, int] | None:
    return queue.close_question_in(session, NAME, **kw)


def add(session: Session, row: OutboxMessage) -> int:
    return queue.add(session, row, NAME)


def incident_message(db: Database, chat_id: str, incident_id: int) -> ChannelMessage | None:
    return queue.incident_message(db, NAME, chat_id, incident_id)


def pending(db: Database, limit: int | None = None) -> list[OutboxMessage]:
    return queue.pending(db, NAME, limit)


def OutboxWorker(bot: Bot, db: Database, *, group_wait: float = 0.0) -> _worker.OutboxWorker:
    """The outbox worker for Telegram's rows."""
    return _worker.OutboxWorker(TelegramChannel(bot), db, group_wait=group_wait)


def report_calls(chat: str, text: str, png: bytes) -> list[dict[str, Any]]:
    """The two calls of a daily report in the chat ``chat``: its text, then its chart."""
    report = {"chat_id": chat, "role": "report"}
    return [
        {**report, "method": "send", "text": cut(text, more=REPORT_POINTER)},
        {**report, "method": "photo", "text": "Incidents per hour", "photo": png},
    ]
