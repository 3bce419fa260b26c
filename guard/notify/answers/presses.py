"""Remember, authorise, then act (or refuse and audit): the events of every channel, and the
presses (buttons) among them.

Answers never run remedies themselves: they turn a press or a reply into a ``HumanCommand``
(``queue_command``, through the authorisation gate), which the agent picks up as it does for
``guard approve|deny|reply``. Every answer goes through the outbox, except a press's immediate
answer (``Inbound.answer``, which is not a chat message).

Each event is acted on once: the answer stores it (``Inbound.handled``) in the transaction that
queues the command or the answer, and ``remember`` skips one stored before (a channel delivers
it again when Guard died before confirming it).

This module holds the presses; ``replies`` the fixes sent as text, ``slash`` the slash
commands, ``base`` what they share.

Tested through every channel by tests/notify/test_inbound_contract.py.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from guard.actions.fixforms import fix_forms
from guard.domain.durations import format_duration
from guard.domain.exceptions import GuardError
from guard.incidents.approvals import ACK, CONFIRM_KINDS, verb_for
from guard.incidents.commands import queue_command
from guard.incidents.gate import VIEW, NotAuthorised, Refused
from guard.memory.conversation import record_message
from guard.notify import inbound
from guard.notify.answers.ackpress import ack_press
from guard.notify.answers.base import skipped
from guard.notify.answers.promotepress import promotion_press
from guard.notify.answers.senders import UserId
from guard.notify.answers.slash import INCIDENT_ID, SlashCommands
from guard.notify.inbound import Inbound
from guard.notify.outbox import queue, targets
from guard.store.ladder import ANSWERS
from guard.store.models import OutboxMessage
from guard.store.state import get_state
from guard.util.commandtext import approval_key, short

__all__ = ["Answers"]


def fix_prompt(code: str, incident_id: int, shell: bool = True) -> str:
    """The prompt under "Send a fix": a shell command only where a sandbox can run one."""
    what = (
        f"a shell command for the sandbox, or an action such as {code}"
        if shell
        else f"an action such as {code} (no sandbox here: no shell commands)"
    )
    return (
        f"Reply to this message with the command that fixes incident #{incident_id}: {what}. "
        "Guard runs it, checks that the incident is cured, and learns it as a skill."
    )


class Answers(SlashCommands):
    async def remember(self, event: Inbound) -> bool:
        """Whether to act on ``event``: not if it was handled before. Keep every other incoming
        message and press in conversation memory (a refused user's flood: one a window)."""
        if await asyncio.to_thread(inbound.seen, self.db, self.channel, event.update_id):
            skipped(event)
            return False
        if event.chat is None:
            return True
        text = f"[pressed] {event.data}" if event.kind == "press" else event.text
        if (
            event.user is not None
            and self.auth.quiet(event.user)
            and isinstance(await self.decide(event.user, VIEW), Refused)
        ):
            return True  # a refused user's flood: one message a window is kept, with its refusal
        await asyncio.to_thread(
            record_message,
            self.db,
            chat=event.chat,
            direction="in",
            author=self.actor(event.user).name,
            text=text,
            update_id=event.update_id,
        )
        return True

    async def press(self, event: Inbound) -> None:
        """A button pressed: spend its approval, queue its command, close its question."""
        data, uid = event.data, event.user
        chat_id, message_id = event.chat, event.message_id
        if data.startswith("fix:"):
            await self._fix_prompt(event, data)
            return
        preview = await asyncio.to_thread(self.auth.preview, data)
        if (
            preview is None
            or preview.kind in CONFIRM_KINDS
            or isinstance(await self.decide(uid, verb_for(preview), preview.incident_id), Refused)
        ):  # refused (and audited) or a confirmation: spent on its own
            claimed = await asyncio.to_thread(self.auth.claim, data, uid, chat_id, message_id)
            if isinstance(claimed, Refused):
                await event.answer(f"Refused: {claimed.reason}", True)
            elif claimed.kind in CONFIRM_KINDS:
                await self._confirmed(event, claimed.incident_id, claimed.id, claimed.kind)
            return
        assert uid is not None  # the gate refuses an unknown sender
        if preview.kind in ANSWERS:  # a promotion question's (admin only: the gate said so)
            said = await asyncio.to_thread(
                promotion_press, self.db, self.gw.settings, self.auth, event
            )
            await event.answer(said, said.startswith("Refused"))
            if not said.startswith(("Refused", "Already")):
                await self.say(chat_id or self.gw.chat_id, self.markup.escape(said))
            return
        if preview.kind == ACK:
            said = await asyncio.to_thread(
                ack_press, self.db, self.auth, event, preview.incident_id
            )
            await event.answer(said, said.startswith("Refused"))
            return
        who = self.actor(uid).name
        verb = verb_for(preview)
        mute_for = self.mute_for
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
        pressed = Press(event, uid, preview.incident_id)
        try:
            await asyncio.to_thread(
                self._press_and_queue, pressed, verb, preview.skill, closed, mute_for, bound
            )
        except IntegrityError:
            skipped(event)
            return
        except PressRefused:  # spent meanwhile: say why, as an audited refusal
            claimed = await asyncio.to_thread(self.auth.claim, data, uid, chat_id, message_id)
            reason = claimed.reason if isinstance(claimed, Refused) else "already answered"
            await event.answer(f"Refused: {reason}", True)
            return
        except NotAuthorised as exc:  # the gate changed its mind since the door: still open
            await event.answer(f"Refused: {exc}", True)
            return
        except GuardError as exc:  # the incident went away between the press and now
            failed = await asyncio.to_thread(
                self.gw.notifier.closed_text,
                preview.incident_id,
                "failed",
                f"{who} answered, but nothing ran: {exc}",
            )
            await asyncio.to_thread(
                queue.close_question,
                self.db,
                self.channel,
                chat_id=chat_id or self.gw.chat_id,
                text=failed,
                incident_id=preview.incident_id,
            )
            await event.answer(f"Could not {verb}: {exc}", True)
            return
        await event.answer(said, False)

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
        """One transaction: the gate asked, the event stored, the approval spent, the
        question's closing edit queued, then the command (a crash keeps all of it or none: the
        channel delivers the event again). The closing edit is queued before the command: the
        agent may heal the incident at once and queue its own "Resolved" edit, which must come
        after this one. An approval bound to a command's digest queues it with the digest,
        which the agent checks against the command it would run."""
        queued: list[tuple[OutboxMessage, int]] = []
        event = press.event

        def spend(session: Session) -> None:
            event.handled().mark(session)
            got = self.auth.claim_in(
                session, event.data, press.user_id, event.chat, event.message_id
            )
            if isinstance(got, Refused):
                raise PressRefused(got.reason)
            chat = event.chat or self.gw.chat_id
            edit = queue.close_question_in(  # in the chat pressed in (routes: several)
                session,
                self.channel,
                chat_id=chat,
                text=closed,
                incident_id=got.incident_id,
                message=targets.message_of(
                    session, self.channel, str(chat), event.message_id or ""
                ),
            )
            if edit is not None:
                queued.append(edit)

        queue_command(
            self.db,
            incident_id=press.incident_id,
            verb=verb,
            actor=self.actor(press.user_id),
            gate=self.auth.gate,
            skill=skill,
            fix=str(mute_for) if verb == "mute" else (bound or None),
            also=spend,
        )
        for row, outbox_id in queued:
            queue.remember(self.db, row, outbox_id)

    async def _fix_prompt(self, event: Inbound, data: str) -> None:
        number = data.split(":", 1)[1]
        valid = bool(INCIDENT_ID.fullmatch(number)) and not number.startswith("#")
        incident_id = int(number, 10) if valid else None
        decision = await self.decide(event.user, "reply", incident_id)
        if isinstance(decision, Refused):
            reason = decision.reason
            await asyncio.to_thread(self.auth.refuse, event.user, f"callback:{data}", reason)
            await event.answer(f"Refused: {reason}", True)
            return
        if incident_id is None:
            await event.answer("Refused: unknown button", True)
            return
        forms = await asyncio.to_thread(fix_forms, self.gw.settings)  # kept a minute
        await self.say(
            event.chat or self.gw.chat_id,
            fix_prompt(self.markup.code("docker.restart NAME"), incident_id, forms.shell),
            incident_id=incident_id,
            thread=True,
            role="prompt",
        )
        await event.answer("Reply to the prompt with your fix", False)


@dataclass(frozen=True)
class Press:
    """A button press: its event, who pressed and the incident it answers."""

    event: Inbound
    user_id: UserId
    incident_id: int


class PressRefused(Exception):
    """The approval was spent, expired or moved between the preview and the press."""
