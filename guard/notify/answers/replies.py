"""Fixes sent as text: a reply to an incident's message (or to a grouped message, as ``#ID
FIX``), ``/fix ID COMMAND``, and [Run] on a "Run `...` as a fix?" question. A reply that is not
plainly a fix is asked about first (``confirm``); each fix is queued as a ``reply`` command
through the gate, with its acknowledgement, in the transaction that stores the event.

Tested through every channel by tests/notify/test_inbound_contract.py.
"""

from __future__ import annotations

import asyncio

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, func, select

from guard.domain.exceptions import GuardError
from guard.incidents.commands import queue_command
from guard.incidents.gate import Refused
from guard.notify.answers import confirm
from guard.notify.answers.base import AnswerBase, skipped
from guard.notify.inbound import Inbound
from guard.notify.outbox import queue
from guard.notify.outbox.grouping import group_reply
from guard.store.models import HumanCommand, OutboxMessage


class Replies(AnswerBase):
    async def text(self, event: Inbound) -> None:
        """A message: a reply to one of Guard's is a fix (or a question about one)."""
        if event.reply_to is None or not event.text or event.chat is None:
            return
        target = await asyncio.to_thread(self.auth.message_for, event.chat, event.reply_to)
        if target is not None and target.role == "group":  # "#ID FIX" names the incident
            named = await asyncio.to_thread(group_reply, self.db, target, event.text)
            if named is None:
                await self.say(
                    event.chat,
                    "This message holds several incidents: reply "
                    f"{self.markup.code('#ID FIX')} to send a fix for one of them.",
                )
                return
            incident_id, fix = named
        elif target is None or target.incident_id is None:
            return  # a reply to something that is not Guard's
        else:
            incident_id, fix = target.incident_id, event.text.strip()
        user = event.user
        # off the event loop: parsing an action imports its family's client the first time
        # (the Docker SDK: a 170 ms stall of every monitor, measured by the hostile fuzz)
        plain = await asyncio.to_thread(confirm.unambiguous, fix, self.actions, self.markup.limit)
        if (
            user is not None
            and not plain
            and not isinstance(await self.decide(user, "reply", incident_id), Refused)
        ):
            text, buttons = await asyncio.to_thread(
                confirm.ask,
                self.db,
                self.markup,
                self.channel,
                incident_id=incident_id,
                fix=fix,
                user_id=user,
                ttl=self.gw.settings.agent.approval_ttl,
            )
            await asyncio.to_thread(
                queue.enqueue,
                self.db,
                self.channel,
                method="send",
                chat_id=event.chat,
                text=text,
                buttons=buttons,
                incident_id=incident_id,
                role="confirm",
                reply_to_incident=True,
            )
            return
        await self._fix(event, incident_id, fix)

    async def _confirmed(
        self, event: Inbound, incident_id: int, approval_id: str, kind: str
    ) -> None:
        """[Run] or [Cancel] on a "Run `...` as a fix?" question."""
        pending = await asyncio.to_thread(confirm.pending_fix, self.db, self.channel, approval_id)
        if kind == "fix_cancel" or not pending.get("fix"):
            await event.answer("Cancelled: nothing ran.", False)
            return
        await event.answer("Running it as a fix…", False)
        await self._fix(event, incident_id, str(pending["fix"]))

    async def _fix(self, event: Inbound, incident_id: int, fix: str) -> None:
        user = event.user
        assert event.chat is not None
        decision = await self.decide(user, "reply", incident_id)
        if user is None or isinstance(decision, Refused):
            reason = decision.reason if isinstance(decision, Refused) else "unknown sender"
            await self._refuse(event, f"incident:{incident_id}", reason)
            return
        ack = OutboxMessage(
            method="send",
            chat_id=event.chat,
            incident_id=incident_id,
            role="reply",
            reply_to_incident=True,
        )
        queued: list[int] = []

        def also(session: Session) -> None:  # the event, its command and its answer: one commit
            event.handled().mark(session)
            tries = session.exec(
                select(func.count()).where(
                    HumanCommand.incident_id == incident_id, HumanCommand.verb == "reply"
                )
            ).one()
            again = f" (attempt {tries + 1})" if tries else ""  # each answer its own message
            ack.text = (
                f"Running your fix for incident #{incident_id}{again}; "
                "I will say here whether it cured it."
            )
            queued.append(queue.add(session, ack, self.channel))

        try:
            await asyncio.to_thread(
                queue_command,
                self.db,
                incident_id=incident_id,
                verb="reply",
                actor=self.actor(user),
                gate=self.auth.gate,
                fix=fix,
                also=also,
            )
        except IntegrityError:
            skipped(event)
            return
        except GuardError as exc:
            said = f"Could not take that fix: {self.markup.escape(exc)}"
            await self.say(event.chat, said, event=event)
            return
        await asyncio.to_thread(queue.remember, self.db, ack, queued[0])
