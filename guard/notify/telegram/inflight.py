"""Sends whose outcome is unknown: found again by probing, never posted twice.

The Bot API has no idempotency key and a bot cannot read a chat's history. So before a
``sendMessage`` or ``sendPhoto``, ``begin`` commits the outbox rows as ``in_flight`` with a
``TelegramInFlight`` record: the exact text (or caption) and buttons being sent, and a floor,
the highest message id Guard knows in the chat (``updates.top``). The transaction that stores
the message id removes the record. A record still there when the outbox picks its rows again
(Guard died after the call, or the call timed out) means Telegram may have posted the message.

``probe`` then edits the ids above the floor, one by one, to exactly the same text, parse mode
and buttons. Telegram answers "message is not modified" only for a message with that content
and markup, so that id is the message: Guard adopts it and posts nothing. "Message can't be
edited" (not the bot's: user messages share the chat's ids) and "message to edit not found" (a
deleted message, or none yet) mean look further. The probe stops after ``MISSES`` ids in a row
not found beyond the highest id Guard knows, or after ``LIMIT`` ids; then the outbox sends
again. No other bot message lies above the floor (every sent id raises it), so a probe never
changes a message of Guard's.
"""

from __future__ import annotations

from typing import Any

from loguru import logger
from sqlalchemy import delete
from sqlmodel import Session, col, select
from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup
from telegram.constants import ParseMode
from telegram.error import BadRequest

from guard import cluster
from guard.notify.telegram import updates
from guard.store.db import Database
from guard.store.models import OutboxMessage, OutboxStatus, TelegramInFlight

MISSES = 5  # "not found" in a row beyond the newest known id: the message is not there
LIMIT = 50  # ids probed at most


def markup(buttons: list[Any]) -> InlineKeyboardMarkup | None:
    if not buttons:
        return None
    return InlineKeyboardMarkup(
        [
            [InlineKeyboardButton(label, callback_data=data) for label, data in row]
            for row in buttons
        ]
    )


def find(db: Database, row: OutboxMessage) -> TelegramInFlight | None:
    """The unfinished send that carried ``row``, if any."""
    if row.status != OutboxStatus.in_flight:
        return None
    with db.session() as session:
        for record in session.exec(
            select(TelegramInFlight).where(TelegramInFlight.chat_id == row.chat_id)
        ).all():
            if row.id in record.outbox_ids:
                return record
    return None


def begin(
    db: Database, rows: list[OutboxMessage], method: str, text: str, buttons: list[Any]
) -> TelegramInFlight:
    """Before the call: check this replica still leads (``NotLeader`` otherwise), record the
    call with its fencing token, and commit the rows as in flight with what is sent."""
    chat = rows[0].chat_id
    ids = [r.id for r in rows if r.id is not None]
    with db.session() as session:
        _forget(session, chat, ids)
        for row in rows:
            cluster.current().claim(session, "telegram.send", row.id)
            fresh = session.get(OutboxMessage, row.id)
            if fresh is not None:
                fresh.status = OutboxStatus.in_flight
                session.add(fresh)
        record = TelegramInFlight(
            chat_id=chat,
            outbox_ids=ids,
            method=method,
            text=text,
            buttons=buttons,
            floor=updates.top(session, chat),
        )
        session.add(record)
    return record


def settle(session: Session, rows: list[OutboxMessage], message_id: int) -> None:
    """In the transaction that stores the message id: the send is over."""
    if rows:
        _forget(session, rows[0].chat_id, [r.id for r in rows if r.id is not None])
        updates.raise_top(session, rows[0].chat_id, message_id)


def drop(db: Database, row: OutboxMessage) -> None:
    """The call certainly did not post (refused, 429): nothing is in flight for ``row``."""
    with db.session() as session:
        _forget(session, row.chat_id, [row.id] if row.id is not None else [])


def _forget(session: Session, chat: str, ids: list[int]) -> None:
    for record in session.exec(
        select(TelegramInFlight).where(TelegramInFlight.chat_id == chat)
    ).all():
        if set(ids) & set(record.outbox_ids):
            session.execute(delete(TelegramInFlight).where(col(TelegramInFlight.id) == record.id))


async def probe(bot: Bot, db: Database, record: TelegramInFlight) -> int | None:
    """The id of the message ``record`` posted, if Telegram has it; else None."""

    def newest() -> int:
        with db.session() as session:
            return updates.top(session, record.chat_id)

    known = newest()
    misses = 0
    keyboard = markup(record.buttons)
    for message_id in range(record.floor + 1, record.floor + 1 + LIMIT):
        try:
            if record.method == "photo":
                await bot.edit_message_caption(
                    chat_id=record.chat_id,
                    message_id=message_id,
                    caption=record.text or None,
                    parse_mode=ParseMode.HTML,
                    reply_markup=keyboard,
                )
            else:
                await bot.edit_message_text(
                    record.text,
                    chat_id=record.chat_id,
                    message_id=message_id,
                    parse_mode=ParseMode.HTML,
                    reply_markup=keyboard,
                )
        except BadRequest as exc:
            why = str(exc).lower()
            if "not modified" in why:
                logger.info(
                    "telegram: message {} in chat is the one sent before the restart; "
                    "not posting it again",
                    message_id,
                )
                return message_id
            if "not found" in why and message_id > known:
                misses += 1
                if misses >= MISSES:
                    return None
            else:
                misses = 0
            continue
        # Accepted: a message of the bot's with other content above the floor, which cannot
        # be (every sent id raises the floor). It shows this content now: adopt it.
        logger.warning("telegram: probing edited message {}; adopting it", message_id)
        return message_id
    return None
