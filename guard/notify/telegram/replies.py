"""Fixes sent as text: a reply to an incident's message (or to a grouped message, as ``#ID
FIX``), ``/fix ID COMMAND``, and [Run] on a "Run `...` as a fix?" question. A reply that is not
plainly a fix is asked about first (``confirm``); each fix is queued as a ``reply`` command
through the gate, with its acknowledgement, in the transaction that stores the update."""

from __future__ import annotations

import asyncio

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, func, select
from telegram import Update

from guard.domain.exceptions import GuardError
from guard.incidents.commands import queue_command
from guard.incidents.gate import Refused
from guard.notify.telegram import confirm, outbox
from guard.notify.telegram.grouping import group_reply
from guard.notify.telegram.handling import Ctx, HandlerBase, handled, skipped
from guard.notify.telegram.messages import esc
from guard.notify.telegram.senders import telegram_actor
from guard.store.models import HumanCommand, OutboxMessage


class Replies(HandlerBase):
    async def on_text(self, update: Update, context: Ctx) -> None:
        msg = update.effective_message
        if msg is None or msg.reply_to_message is None or not msg.text:
            return
        target = await asyncio.to_thread(
            self.auth.message_for, msg.chat.id, msg.reply_to_message.message_id
        )
        if target is not None and target.role == "group":  # "#ID FIX" names the incident
            named = await asyncio.to_thread(group_reply, self.db, target, msg.text)
            if named is None:
                await self.say(
                    msg.chat.id,
                    "This message holds several incidents: reply "
                    "<code>#ID FIX</code> to send a fix for one of them.",
                )
                return
            incident_id, fix = named
        elif target is None or target.incident_id is None:
            return  # a reply to something that is not Guard's
        else:
            incident_id, fix = target.incident_id, msg.text.strip()
        user = update.effective_user
        if (
            user is not None
            and not confirm.unambiguous(fix, self.actions)
            and not isinstance(await self.decide(user.id, "reply", incident_id), Refused)
        ):
            text, buttons = await asyncio.to_thread(
                confirm.ask,
                self.db,
                incident_id=incident_id,
                fix=fix,
                user_id=user.id,
                ttl=self.gw.settings.agent.approval_ttl,
            )
            await asyncio.to_thread(
                outbox.enqueue,
                self.db,
                method="send",
                chat_id=msg.chat.id,
                text=text,
                buttons=buttons,
                incident_id=incident_id,
                role="confirm",
                reply_to_incident=True,
            )
            return
        await self._fix(update, incident_id, fix)

    async def _confirmed(
        self, update: Update, incident_id: int, approval_id: str, kind: str
    ) -> None:
        """[Run] or [Cancel] on a "Run `...` as a fix?" question."""
        q = update.callback_query
        assert q is not None
        pending = await asyncio.to_thread(confirm.pending_fix, self.db, approval_id)
        if kind == "fix_cancel" or not pending.get("fix"):
            await q.answer("Cancelled: nothing ran.")
            return
        await q.answer("Running it as a fix…")
        await self._fix(update, incident_id, str(pending["fix"]))

    async def _fix(self, update: Update, incident_id: int, fix: str) -> None:
        user = update.effective_user
        chat = update.effective_chat
        assert chat is not None
        decision = await self.decide(user.id if user else None, "reply", incident_id)
        if user is None or isinstance(decision, Refused):
            reason = decision.reason if isinstance(decision, Refused) else "unknown sender"
            await self._refuse(update, f"incident:{incident_id}", reason)
            return
        ack = OutboxMessage(
            method="send",
            chat_id=str(chat.id),
            incident_id=incident_id,
            role="reply",
            reply_to_incident=True,
        )
        queued: list[int] = []

        def also(session: Session) -> None:  # the update, its command and its answer: one commit
            handled(update).mark(session)
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
            queued.append(outbox.add(session, ack))

        try:
            await asyncio.to_thread(
                queue_command,
                self.db,
                incident_id=incident_id,
                verb="reply",
                actor=telegram_actor(user.id),
                gate=self.auth.gate,
                fix=fix,
                also=also,
            )
        except IntegrityError:
            skipped(update)
            return
        except GuardError as exc:
            await self.say(chat.id, f"Could not take that fix: {esc(exc)}", update=update)
            return
        await asyncio.to_thread(outbox.remember, self.db, ack, queued[0])
