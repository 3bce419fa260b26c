"""Telegram as a ``Channel``: python-telegram-bot calls, Telegram's errors as the port's.

``post`` is ``sendMessage`` (``sendPhoto`` for a picture, its caption cut to Telegram's 1024
characters), in reply to a message with ``allow_sending_without_reply``; ``edit`` is
``editMessageText`` (and "message is not modified" is no error). ``RetryAfter`` (a 429) becomes
``Retry``, a network error ``Unreachable`` (certain not to have posted only when the connection
was never made), any other refusal ``Rejected``.

``find`` is the probe: the Bot API has no idempotency key and a bot cannot read a chat's
history, so it edits the ids above the floor, one by one, to exactly the same text, parse mode
and buttons. Telegram answers "message is not modified" only for a message with that content
and markup, so that id is the message: Guard adopts it and posts nothing. "Message can't be
edited" (not the bot's: user messages share the chat's ids) and "message to edit not found" (a
deleted message, or none yet) mean look further. The probe stops after ``MISSES`` ids in a row
not found beyond the highest id Guard knows, or after ``LIMIT`` ids. No other bot message lies
above the floor (every sent id raises it), so a probe never changes a message of Guard's.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from loguru import logger
from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, ReplyParameters
from telegram.constants import ParseMode
from telegram.error import BadRequest, NetworkError, RetryAfter, TelegramError
from telegram.warnings import PTBDeprecationWarning

from guard.notify.channel import Buttons, Post, Rejected, Retry, Unreachable
from guard.notify.telegram.markup import HtmlMarkup
from guard.notify.telegram.messages import CAPTION_LIMIT, cut

NAME = "telegram"
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


@contextmanager
def errors() -> Iterator[None]:
    """Telegram's errors as the Channel port's."""
    try:
        yield
    except RetryAfter as exc:
        with warnings.catch_warnings():  # an int today, a timedelta from PTB 23 on
            warnings.simplefilter("ignore", PTBDeprecationWarning)
            after: Any = exc.retry_after
        raise Retry(
            after.total_seconds() if hasattr(after, "total_seconds") else float(after)
        ) from exc
    except BadRequest as exc:
        raise Rejected(str(exc)) from exc
    except NetworkError as exc:  # also TimedOut
        never_sent = isinstance(exc.__cause__, httpx.ConnectError)
        raise Unreachable(str(exc), uncertain=not never_sent) from exc
    except TelegramError as exc:  # Forbidden, a chat that went away...
        raise Rejected(str(exc)) from exc


class TelegramChannel:
    name = NAME

    def __init__(self, bot: Bot) -> None:
        self.bot = bot
        self.markup = HtmlMarkup()

    async def post(self, post: Post) -> str:
        reply = (
            ReplyParameters(int(post.reply_to), allow_sending_without_reply=True)
            if post.reply_to is not None
            else None
        )
        if post.photo is not None:
            caption = cut(post.text, CAPTION_LIMIT)
            with errors():
                msg = await self.bot.send_photo(
                    post.chat,
                    photo=post.photo,
                    caption=caption or None,
                    parse_mode=ParseMode.HTML,
                    reply_parameters=reply,
                )
        else:
            with errors():
                msg = await self.bot.send_message(
                    post.chat,
                    post.text,
                    parse_mode=ParseMode.HTML,
                    reply_markup=markup(post.buttons),
                    reply_parameters=reply,
                )
        return str(msg.message_id)  # Telegram's ids are numbers; Guard's are strings

    async def edit(self, chat: str, message_id: str, text: str, buttons: Buttons) -> None:
        with errors():
            try:
                await self.bot.edit_message_text(
                    text,
                    chat_id=chat,
                    message_id=int(message_id),
                    parse_mode=ParseMode.HTML,
                    reply_markup=markup(buttons),
                )
            except BadRequest as exc:
                if "not modified" not in str(exc).lower():
                    raise

    async def find(self, post: Post, floor: int, known: int) -> str | None:
        misses = 0
        keyboard = markup(post.buttons)
        for message_id in range(floor + 1, floor + 1 + LIMIT):
            with errors():
                try:
                    await self._same(post, message_id, keyboard)
                except BadRequest as exc:
                    why = str(exc).lower()
                    if "not modified" in why:
                        return str(message_id)
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
            return str(message_id)
        return None

    async def _same(
        self, post: Post, message_id: int, keyboard: InlineKeyboardMarkup | None
    ) -> None:
        """Edit ``message_id`` to exactly ``post``'s content."""
        if post.photo is not None:
            await self.bot.edit_message_caption(
                chat_id=post.chat,
                message_id=message_id,
                caption=cut(post.text, CAPTION_LIMIT) or None,
                parse_mode=ParseMode.HTML,
                reply_markup=keyboard,
            )
        else:
            await self.bot.edit_message_text(
                post.text,
                chat_id=post.chat,
                message_id=message_id,
                parse_mode=ParseMode.HTML,
                reply_markup=keyboard,
            )
