"""The gateway's update handlers: remember, authorise, then act (or refuse and audit).

Handlers never run remedies themselves: they turn a press or a reply into a ``HumanCommand``
(``queue_command``), which the agent picks up as it does for ``guard approve|deny|reply``.
Every answer they give goes through the outbox, except ``answerCallbackQuery`` (which must be
immediate and is not a chat message).

Each update is acted on once: the handler stores its ``update_id`` in the transaction that
queues the command or the answer (``updates``), and ``remember`` skips an update stored before
(Telegram delivers it again when Guard died before confirming it).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from loguru import logger
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, func, select
from telegram import Update
from telegram.error import TelegramError
from telegram.ext import ApplicationHandlerStop, ContextTypes

from guard.actions import ActionRegistry
from guard.commandtext import approval_key, short
from guard.durations import format_duration, parse_duration
from guard.exceptions import GuardError
from guard.incidents.commands import queue_command
from guard.memory.conversation import record_message
from guard.notify.telegram import confirm, outbox, updates
from guard.notify.telegram.auth import CONFIRM_KINDS, Refusal, actor
from guard.notify.telegram.commands import HELP, incidents_text, skills_text, status_text
from guard.notify.telegram.grouping import group_reply
from guard.notify.telegram.messages import esc
from guard.store import mutes
from guard.store.models import HumanCommand, OutboxMessage
from guard.store.state import get_state

if TYPE_CHECKING:
    from guard.notify.telegram.ports import GatewayPort

Ctx = ContextTypes.DEFAULT_TYPE
FIX_PROMPT = (
    "Reply to this message with the command that fixes incident #{id}: a shell "
    "command for the sandbox, or an action such as <code>docker.restart NAME</code>. "
    "Guard runs it, checks that the incident is cured, and learns it as a skill."
)
VERBS = {"skill": "approve", "deny": "deny", "mute": "mute"}
INCIDENT_ID = re.compile(r"#?[0-9]{1,12}", re.ASCII)


class Handlers:
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
            _skipped(update)

    async def remember(self, update: Update, context: Ctx) -> None:
        """Skip an update handled before; keep every other incoming message and press in
        conversation memory (group -1: first)."""
        if await asyncio.to_thread(updates.seen, self.db, update.update_id):
            _skipped(update)
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
        if user is not None and not self.auth.user_allowed(user.id) and self.auth.quiet(user.id):
            return  # a refused user's flood: one message a window is kept, with its refusal
        await asyncio.to_thread(
            record_message,
            self.db,
            chat=str(chat.id),
            direction="in",
            author=actor(user.id) if user else "telegram:unknown",
            text=text,
            update_id=update.update_id,
        )

    async def _refuse(self, update: Update, what: str, reason: str) -> None:
        user = update.effective_user
        refusal = await asyncio.to_thread(self.auth.refuse, user.id if user else None, what, reason)
        if refusal.logged and update.effective_chat is not None:  # once a window per user
            await self.say(update.effective_chat.id, f"⛔ Refused: {reason}.", role="refused")

    def _denied_reason(self) -> str:
        return (
            "no one is allowed yet (telegram.allowed_user_ids is empty)"
            if not self.auth.allowed
            else "you are not on this Guard's allowlist"
        )

    # -- buttons --------------------------------------------------------------------------------

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
            preview is None or preview.kind in CONFIRM_KINDS or not self.auth.user_allowed(uid)
        ):  # refused (and audited) or a confirmation: spent on its own
            claimed = await asyncio.to_thread(self.auth.claim, data, uid, chat_id, message_id)
            if isinstance(claimed, Refusal):
                await q.answer(f"Refused: {claimed.reason}", show_alert=True)
            elif claimed.kind in CONFIRM_KINDS:
                await self._confirmed(update, claimed.incident_id, claimed.id, claimed.kind)
            return
        who = actor(uid)
        verb = VERBS.get(preview.kind, preview.kind)
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
                self._press_and_queue, press, verb, who, preview.skill, closed, mute_for, bound
            )
        except IntegrityError:
            _skipped(update)
            return
        except PressRefused:  # spent meanwhile: say why, as an audited refusal
            claimed = await asyncio.to_thread(self.auth.claim, data, uid, chat_id, message_id)
            reason = claimed.reason if isinstance(claimed, Refusal) else "already answered"
            await q.answer(f"Refused: {reason}", show_alert=True)
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
                chat_id=self.gw.chat_id,
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
        who: str,
        skill: str | None,
        closed: str,
        mute_for: float,
        bound: str = "",
    ) -> None:
        """One transaction: the update stored, the approval spent, the question's closing edit
        queued, then the command (a crash keeps all of it or none: Telegram delivers the
        update again). The closing edit is queued before the command: the agent may heal the
        incident at once and queue its own "Resolved" edit, which must come after this one.
        An approval bound to a command's digest queues it with the digest, which the agent
        checks against the command it would run."""
        queued: list[tuple[OutboxMessage, int]] = []

        def spend(session: Session) -> None:
            handled(press.update).mark(session)
            got = self.auth.claim_in(
                session, press.data, press.user_id, press.chat_id, press.message_id
            )
            if isinstance(got, Refusal):
                raise PressRefused(got.reason)
            edit = outbox.close_question_in(
                session, chat_id=self.gw.chat_id, text=closed, incident_id=got.incident_id
            )
            if edit is not None:
                queued.append(edit)

        queue_command(
            self.db,
            incident_id=press.incident_id,
            verb=verb,
            actor=who,
            channel="telegram",
            skill=skill,
            fix=str(mute_for) if verb == "mute" else (bound or None),
            also=spend,
        )
        for row, outbox_id in queued:
            outbox.remember(self.db, row, outbox_id)

    async def _fix_prompt(self, update: Update, data: str) -> None:
        q = update.callback_query
        assert q is not None
        if not self.auth.user_allowed(q.from_user.id):
            reason = self._denied_reason()
            await asyncio.to_thread(self.auth.refuse, q.from_user.id, f"callback:{data}", reason)
            await q.answer(f"Refused: {reason}", show_alert=True)
            return
        number = data.split(":", 1)[1]
        if not INCIDENT_ID.fullmatch(number) or number.startswith("#"):
            await q.answer("Refused: unknown button", show_alert=True)
            return
        incident_id = int(number, 10)
        await self.say(
            self.gw.chat_id,
            FIX_PROMPT.format(id=incident_id),
            incident_id=incident_id,
            thread=True,
            role="prompt",
        )
        await q.answer("Reply to the prompt with your fix")

    # -- fixes by reply -------------------------------------------------------------------------

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
            and self.auth.user_allowed(user.id)
            and not confirm.unambiguous(fix, self.actions)
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
        if user is None or not self.auth.user_allowed(user.id):
            await self._refuse(update, f"incident:{incident_id}", self._denied_reason())
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
                actor=actor(user.id),
                channel="telegram",
                fix=fix,
                also=also,
            )
        except IntegrityError:
            _skipped(update)
            return
        except GuardError as exc:
            await self.say(chat.id, f"Could not take that fix: {esc(exc)}", update=update)
            return
        await asyncio.to_thread(outbox.remember, self.db, ack, queued[0])

    # -- commands -------------------------------------------------------------------------------

    async def on_command(self, update: Update, context: Ctx) -> None:
        msg = update.effective_message
        user = update.effective_user
        if msg is None or not msg.text:
            return
        name = msg.text.split()[0].lstrip("/").split("@")[0].lower()
        args = list(context.args or [])
        if user is None or not self.auth.user_allowed(user.id):
            await self._refuse(update, f"command:{name}", self._denied_reason())
            return
        chat = msg.chat.id
        gw = self.gw
        if name in ("help", "start"):
            await self.say(chat, HELP, update=update)
        elif name == "status":
            await self.say(
                chat, await asyncio.to_thread(status_text, self.db, gw.runtime), update=update
            )
        elif name == "incidents":
            await self.say(chat, await asyncio.to_thread(incidents_text, self.db), update=update)
        elif name == "skills":
            await self.say(chat, await asyncio.to_thread(skills_text, gw.settings), update=update)
        elif name == "report":
            try:
                await gw.send_report(str(chat), also=handled(update).mark)
            except IntegrityError:
                _skipped(update)
        elif name == "fix":
            if len(args) < 2 or not INCIDENT_ID.fullmatch(args[0]):  # not isdigit: "²" is one
                await self.say(chat, "Usage: <code>/fix ID COMMAND</code>", update=update)
                return
            fix = msg.text.split(None, 2)[2]
            await self._fix(update, int(args[0].lstrip("#"), 10), fix.strip())
        elif name == "mute":
            await self._mute(chat, user.id, args, update)
        elif name == "unmute":
            if len(args) != 1:
                await self.say(chat, "Usage: <code>/unmute TARGET</code>", update=update)
                return
            n = await asyncio.to_thread(mutes.unmute, self.db, args[0], actor(user.id))
            await self.say(
                chat,
                f"Unmuted {esc(args[0])} ({n} mute(s) ended)."
                if n
                else f"{esc(args[0])} was not muted.",
                update=update,
            )

    async def _mute(self, chat: int, uid: int, args: list[str], update: Update) -> None:
        try:
            if len(args) != 2:
                raise ValueError("two arguments")
            seconds = parse_duration(args[1])
        except ValueError:
            await self.say(
                chat,
                "Usage: <code>/mute TARGET DURATION</code>, e.g. <code>/mute api 2h</code>",
                update=update,
            )
            return
        row = await asyncio.to_thread(mutes.mute, self.db, args[0], seconds, actor(uid))
        await self.say(
            chat,
            f"Muted {esc(args[0])} until {row.until:%Y-%m-%d %H:%M} UTC: its "
            "incidents are recorded, not announced or remediated.",
            update=update,
        )

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


def handled(update: Update) -> updates.Handled:
    msg = update.effective_message
    chat = update.effective_chat
    return updates.Handled(
        update.update_id, chat.id if chat else None, msg.message_id if msg else None
    )


def _skipped(update: Update | None) -> None:
    if update is not None:
        logger.info("telegram update {} was handled before; skipped", update.update_id)
