"""What every answer shares: the runner's parts, answering through the outbox in the channel's
markup, asking the gate about a sender and refusing (audited once a window per sender), and
marking an event handled in the transaction that acts on it.

Tested through every channel by tests/notify/test_inbound_contract.py.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from loguru import logger
from sqlalchemy.exc import IntegrityError

from guard.actions import ActionRegistry
from guard.incidents.gate import Actor, Allowed, Refused
from guard.notify import kinds
from guard.notify.inbound import Inbound
from guard.notify.outbox import queue

if TYPE_CHECKING:
    from guard.notify.answers.port import GatewayPort
    from guard.notify.answers.senders import UserId
    from guard.notify.channel import Markup


class AnswerBase:
    def __init__(self, gateway: GatewayPort, channel: str, markup: Markup) -> None:
        self.gw = gateway
        self.db = gateway.db
        self.auth = gateway.auth
        self.channel = channel
        self.markup = markup
        self.actions = ActionRegistry()  # only to tell an action from chat, never to run one

    @property
    def mute_for(self) -> float:
        """How long the mute button mutes: the channel's section says (a channel without one,
        the console, as the chat channels do)."""
        own = getattr(self.gw.settings, self.channel, None)
        if own is None:
            return float(kinds.chat_setting(self.gw.settings, "mute_for"))
        return float(own.mute_for)

    def actor(self, user_id: UserId | None) -> Actor:
        return self.auth.actor(user_id)

    async def say(
        self,
        chat_id: int | str,
        text: str,
        *,
        incident_id: int | None = None,
        thread: bool = False,
        role: str = "text",
        event: Inbound | None = None,
    ) -> None:
        """Queue an answer; with ``event``, store it as handled in the same transaction."""
        try:
            await asyncio.to_thread(
                queue.enqueue,
                self.db,
                self.channel,
                method="send",
                chat_id=chat_id,
                text=text,
                incident_id=incident_id,
                role=role,
                reply_to_incident=thread,
                also=event.handled().mark if event is not None else None,
            )
        except IntegrityError:
            skipped(event)

    async def decide(
        self, user_id: UserId | None, verb: str, incident_id: int | None = None
    ) -> Allowed | Refused:
        """The gate's decision on a sender (off the event loop when it reads the incident)."""
        if incident_id is None:
            return self.auth.decide(user_id, verb)
        return await asyncio.to_thread(self.auth.decide, user_id, verb, incident_id)

    async def _refuse(self, event: Inbound, what: str, reason: str) -> None:
        refusal = await asyncio.to_thread(self.auth.refuse, event.user, what, reason)
        if refusal.logged and event.chat is not None:  # once a window per user
            await self.say(event.chat, f"⛔ Refused: {reason}.", role="refused")


def skipped(event: Inbound | None) -> None:
    if event is not None:
        logger.info("{} update {} was handled before; skipped", event.channel, event.update_id)
