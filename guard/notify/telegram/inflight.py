"""Telegram's posts in flight (``guard.notify.outbox.inflight``), found by ``TelegramChannel``'s
probe."""

from __future__ import annotations

from telegram import Bot

from guard.notify.channel import Post
from guard.notify.outbox import inflight as core
from guard.notify.outbox.inflight import begin, drop, find, settle
from guard.notify.telegram.channel import LIMIT, MISSES, TelegramChannel, markup
from guard.store.db import Database
from guard.store.models import InFlight

__all__ = ["LIMIT", "MISSES", "begin", "drop", "find", "markup", "probe", "settle"]


async def probe(bot: Bot, db: Database, record: InFlight) -> str | None:
    """The id of the message ``record`` posted, if Telegram has it; else None."""
    photo = b"" if record.method == "photo" else None
    post = Post(record.chat_id, record.text, record.buttons, photo)
    known = core.known(db, record.channel, record.chat_id)
    return await TelegramChannel(bot).find(post, record.floor, known)
