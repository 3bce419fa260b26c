"""What every update handler shares: the gateway's parts, answering through the outbox, asking
the gate about a sender and refusing (audited once a window per sender), and marking an update
handled in the transaction that acts on it."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from loguru import logger
from sqlalchemy.exc import IntegrityError
from telegram import Update
from telegram.ext import ContextTypes

from guard.actions import ActionRegistry
from guard.incidents.gate import Allowed, Refused
from guard.notify.telegram import outbox, updates

if TYPE_CHECKING:
    from guard.notify.telegram.ports import GatewayPort

Ctx = ContextTypes.DEFAULT_TYPE


class HandlerBase:
    def __init__(self, gateway: GatewayPort) -> None:
        self.gw = gateway
        self.db = gateway.db
        self.auth = gateway.auth
        self.actions = ActionRegistry()  # only to tell an action from chat, never to run one

    async def say(
        self,
        chat_id: int | str,
        text: str,
        *,
        incident_id: int | None = None,
        thread: bool = False,
        role: str = "text",
        update: Update | None = None,
    ) -> None:
        """Queue an answer; with ``update``, store it as handled in the same transaction."""
        try:
            await asyncio.to_thread(
                outbox.enqueue,
                self.db,
                method="send",
                chat_id=chat_id,
                text=text,
                incident_id=incident_id,
                role=role,
                reply_to_incident=thread,
                also=handled(update).mark if update is not None else None,
            )
        except IntegrityError:
            skipped(update)

    async def decide(
        self, user_id: int | None, verb: str, incident_id: int | None = None
    ) -> Allowed | Refused:
        """The gate's decision on a sender (off the event loop when it reads the incident)."""
        if incident_id is None:
            return self.auth.decide(user_id, verb)
        return await asyncio.to_thread(self.auth.decide, user_id, verb, incident_id)

    async def _refuse(self, update: Update, what: str, reason: str) -> None:
        user = update.effective_user
        refusal = await asyncio.to_thread(self.auth.refuse, user.id if user else None, what, reason)
        if refusal.logged and update.effective_chat is not None:  # once a window per user
            await self.say(update.effective_chat.id, f"⛔ Refused: {reason}.", role="refused")


def handled(update: Update) -> updates.Handled:
    msg = update.effective_message
    chat = update.effective_chat
    return updates.Handled(
        update.update_id, chat.id if chat else None, msg.message_id if msg else None
    )


def skipped(update: Update | None) -> None:
    if update is not None:
        logger.info("telegram update {} was handled before; skipped", update.update_id)
