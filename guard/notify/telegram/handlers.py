"""python-telegram-bot's handlers: each turns its ``Update`` into a neutral ``Inbound`` event
(``updates.event``) and hands it to the channel-neutral answers (``guard.notify.answers``),
which answer through the outbox in Telegram's HTML.

``remember`` runs first for every update (PTB's group -1): an update handled before ends there
(``ApplicationHandlerStop``); then a press goes to ``on_callback``, a slash command to
``on_command`` and any other text to ``on_text``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loguru import logger
from telegram import Update
from telegram.error import TelegramError
from telegram.ext import ApplicationHandlerStop, ContextTypes

from guard.notify.answers.presses import Answers
from guard.notify.telegram.channel import NAME
from guard.notify.telegram.markup import HtmlMarkup
from guard.notify.telegram.updates import event

if TYPE_CHECKING:
    from guard.notify.answers.port import GatewayPort

__all__ = ["Handlers"]

Ctx = ContextTypes.DEFAULT_TYPE


class Handlers:
    def __init__(self, gateway: GatewayPort) -> None:
        self.answers = Answers(gateway, NAME, HtmlMarkup())
        self.gw = gateway
        self.db = gateway.db
        self.auth = gateway.auth

    async def remember(self, update: Update, context: Ctx) -> None:
        """Skip an update handled before; keep every other one in conversation memory."""
        if not await self.answers.remember(event(update)):
            raise ApplicationHandlerStop

    async def on_callback(self, update: Update, context: Ctx) -> None:
        await self.answers.press(event(update))

    async def on_command(self, update: Update, context: Ctx) -> None:
        await self.answers.command(event(update))

    async def on_text(self, update: Update, context: Ctx) -> None:
        await self.answers.text(event(update))

    async def on_error(self, update: object, context: Ctx) -> None:
        err = context.error
        if isinstance(err, TelegramError):
            logger.warning("telegram handler: {}", err)
        else:
            logger.opt(exception=err).error("telegram handler failed")
