"""The gateway's update handlers: remember, authorise, then act (or refuse and audit).

Handlers never run remedies themselves: they turn a press or a reply into a ``HumanCommand``
(``queue_command``, through the authorisation gate), which the agent picks up as it does for
``guard approve|deny|reply``. Every answer they give goes through the outbox, except
``answerCallbackQuery`` (which must be immediate and is not a chat message).

Each update is acted on once: the handler stores its ``update_id`` in the transaction that
queues the command or the answer (``updates``), and ``remember`` skips an update stored before
(Telegram delivers it again when Guard died before confirming it).

This module holds the presses (buttons); ``replies`` the fixes sent as text, ``slash`` the
slash commands, ``handling`` what they share.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from loguru import logger
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session
from telegram import Update
from telegram.error import TelegramError
from telegram.ext import ApplicationHandlerStop

from guard.domain.durations import format_duration
from guard.domain.exceptions import GuardError
from guard.incidents.approvals import ACK, CONFIRM_KINDS, verb_for
from guard.incidents.commands import queue_command
from guard.incidents.gate import VIEW, NotAuthorised, Refused
from guard.memory.conversation import record_message
from guard.notify.telegram import outbox, updates
from guard.notify.telegram.ackpress import ack_press
from guard.notify.telegram.handling import Ctx, handled, skipped
from guard.notify.telegram.senders import telegram_actor
from guard.notify.telegram.slash import INCIDENT_ID, SlashCommands
from guard.store.models import OutboxMessage
from guard.store.state import get_state
from guard.util.commandtext import approval_key, short

__all__ = ["Handlers", "handled"]

FIX_PROMPT = (
    "Reply to this message with the command that fixes incident #{id}: a shell "
    "command for the sandbox, or an action such as <code>docker.restart NAME</code>. "
    "Guard runs it, checks that the incident is cured, and learns it as a skill."
)


class Handlers(SlashCommands):
    async def remember(self, update: Update, context: Ctx) -> None:
        """Skip an update handled before; keep every other incoming message and press in
        conversation memory (group -1: first)."""
        if await asyncio.to_thread(updates.seen, self.db, update.update_id):
            skipped(update)
            raise ApplicationHandlerStop
        user = update.effective_user
        chat = update.effective_chat
        if chat is None:
            return
        if update.callback_query is not None:
            text = f"[pressed] {update.callback_query.data or ''}"
        elif update.effective_message is not None:
            text = update.effective_message.text or ""
        else:
            return
        if (
            user is not None
            and self.auth.quiet(user.id)
            and isinstance(await self.decide(user.id, VIEW), Refused)
        ):
            return  # a refused user's flood: one message a window is kept, with its refusal
        await asyncio.to_thread(
            record_message,
            self.db,
            chat=str(chat.id),
            direction="in",
            author=telegram_actor(user.id).name if user else "telegram:unknown",
            text=text,
            update_id=update.update_id,
        )

    async def on_callback(self, update: Update, context: Ctx) -> None:
        q = update.callback_query
        assert q is not None
        data = q.data or ""
        msg = q.message
        chat_id = msg.chat.id if msg is not None else None
        message_id = msg.message_id if msg is not None else None
        uid = q.from_user.id
        if data.startswith("fix:"):
            await self._fix_prompt(update, data)
            return
        preview = await asyncio.to_thread(self.auth.preview, data)
        if (
            preview is None
            or preview.kind in CONFIRM_KINDS
            or isinstance(await self.decide(uid, verb_for(preview), preview.incident_id), Refused)
        ):  # refused (and audited) or a confirmation: spent on its own
            claimed = await asyncio.to_thread(self.auth.claim, data, uid, chat_id, message_id)
            if isinstance(claimed, Refused):
                await q.answer(f"Refused: {claimed.reason}", show_alert=True)
            elif claimed.kind in CONFIRM_KINDS:
                await self._confirmed(update, claimed.incident_id, claimed.id, claimed.kind)
            return
        if preview.kind == ACK:
            said = await asyncio.to_thread(
                ack_press, self.db, self.auth, update, preview.incident_id
            )
            await q.answer(said[:190], show_alert=said.startswith("Refused"))
            return
        who = telegram_actor(uid).name
        verb = verb_for(preview)
        mute_for = self.gw.settings.telegram.mute_for
        bound = await asyncio.to_thread(self._bound, preview.id)
        running = f"the command shown ({short(bound)})" if bound else f"skill {preview.skill}"
        said = {
            "approve": f"Approved by {who}: running {running}…",
            "deny": f"Denied by {who}: no remedy will run.",
            "mute": f"Muted by {who} for {format_duration(mute_for)}.",
        }.get(verb, verb)
        state = {"approve": "remediating", "deny": "escalated", "mute": "muted"}.get(verb, verb)
        closed = await asyncio.to_thread(
            self.gw.notifier.closed_text, preview.incident_id, state, said
        )
        press = Press(update, data, uid, chat_id, message_id, preview.incident_id)
        try:
            await asyncio.to_thread(
                self._press_and_queue, press, verb, preview.skill, closed, mute_for, bound
            )
        except IntegrityError:
            skipped(update)
            return
        except PressRefused:  # spent meanwhile: say why, as an audited refusal
            claimed = await asyncio.to_thread(self.auth.claim, data, uid, chat_id, message_id)
            reason = claimed.reason if isinstance(claimed, Refused) else "already answered"
            await q.answer(f"Refused: {reason}", show_alert=True)
            return
        except NotAuthorised as exc:  # the gate changed its mind since the door: still open
            await q.answer(f"Refused: {exc}"[:190], show_alert=True)
            return
        except GuardError as exc:  # the incident went away between the press and now
            failed = await asyncio.to_thread(
                self.gw.notifier.closed_text,
                preview.incident_id,
                "failed",
                f"{who} answered, but nothing ran: {exc}",
            )
            await asyncio.to_thread(
                outbox.close_question,
                self.db,
                chat_id=chat_id or self.gw.chat_id,
                text=failed,
                incident_id=preview.incident_id,
            )
            await q.answer(f"Could not {verb}: {exc}"[:190], show_alert=True)
            return
        await q.answer(said[:190])

    def _bound(self, approval_id: str) -> str:
        """The digest of the command an approval was shown with ("" for a skill, deny, mute)."""
        with self.db.session() as session:
            return str(get_state(session, approval_key(approval_id)).get("digest") or "")

    def _press_and_queue(
        self,
        press: Press,
        verb: str,
        skill: str | None,
        closed: str,
        mute_for: float,
        bound: str = "",
    ) -> None:
        """One transaction: the gate asked, the update stored, the approval spent, the
        question's closing edit queued, then the command (a crash keeps all of it or none:
        Telegram delivers the update again). The closing edit is queued before the command: the
        agent may heal the incident at once and queue its own "Resolved" edit, which must come
        after this one. An approval bound to a command's digest queues it with the digest,
        which the agent checks against the command it would run."""
        queued: list[tuple[OutboxMessage, int]] = []

        def spend(session: Session) -> None:
            handled(press.update).mark(session)
            got = self.auth.claim_in(
                session, press.data, press.user_id, press.chat_id, press.message_id
            )
            if isinstance(got, Refused):
                raise PressRefused(got.reason)
            edit = outbox.close_question_in(  # in the chat pressed in (routes: several)
                session,
                chat_id=press.chat_id or self.gw.chat_id,
                text=closed,
                incident_id=got.incident_id,
            )
            if edit is not None:
                queued.append(edit)

        queue_command(
            self.db,
            incident_id=press.incident_id,
            verb=verb,
            actor=telegram_actor(press.user_id),
            gate=self.auth.gate,
            skill=skill,
            fix=str(mute_for) if verb == "mute" else (bound or None),
            also=spend,
        )
        for row, outbox_id in queued:
            outbox.remember(self.db, row, outbox_id)

    async def _fix_prompt(self, update: Update, data: str) -> None:
        q = update.callback_query
        assert q is not None
        number = data.split(":", 1)[1]
        valid = bool(INCIDENT_ID.fullmatch(number)) and not number.startswith("#")
        incident_id = int(number, 10) if valid else None
        decision = await self.decide(q.from_user.id, "reply", incident_id)
        if isinstance(decision, Refused):
            reason = decision.reason
            await asyncio.to_thread(self.auth.refuse, q.from_user.id, f"callback:{data}", reason)
            await q.answer(f"Refused: {reason}", show_alert=True)
            return
        if incident_id is None:
            await q.answer("Refused: unknown button", show_alert=True)
            return
        chat = q.message.chat.id if q.message is not None else self.gw.chat_id
        await self.say(
            chat,
            FIX_PROMPT.format(id=incident_id),
            incident_id=incident_id,
            thread=True,
            role="prompt",
        )
        await q.answer("Reply to the prompt with your fix")

    async def on_error(self, update: object, context: Ctx) -> None:
        err = context.error
        if isinstance(err, TelegramError):
            logger.warning("telegram handler: {}", err)
        else:
            logger.opt(exception=err).error("telegram handler failed")


@dataclass(frozen=True)
class Press:
    """A button press: its update and what it pressed."""

    update: Update
    data: str
    user_id: int
    chat_id: int | None
    message_id: int | None
    incident_id: int


class PressRefused(Exception):
    """The approval was spent, expired or moved between the preview and the press."""
