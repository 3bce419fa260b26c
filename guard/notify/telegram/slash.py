"""The bot's slash commands: ``/help``, ``/status``, ``/incidents``, ``/skills`` (the gate's
``view``), ``/report`` (asks for one now: ``report``), ``/fix``, ``/ack``, ``/mute`` and
``/unmute``.
Each sender passes the gate first; the texts come from ``commands``."""

from __future__ import annotations

import asyncio
import re

from sqlalchemy.exc import IntegrityError
from telegram import Update

from guard.domain.durations import parse_duration
from guard.incidents.gate import UNMUTE, VIEW, Refused
from guard.notify.telegram.ackpress import ack_command
from guard.notify.telegram.commands import HELP, incidents_text, skills_text, status_text
from guard.notify.telegram.handling import Ctx, handled, skipped
from guard.notify.telegram.messages import esc
from guard.notify.telegram.replies import Replies
from guard.notify.telegram.senders import telegram_actor
from guard.store import mutes

INCIDENT_ID = re.compile(r"#?[0-9]{1,12}", re.ASCII)
GATE_VERBS = {
    "fix": "reply",
    "mute": "mute",
    "unmute": UNMUTE,
    "report": "report",
    "ack": "ack",
}  # the rest: view


class SlashCommands(Replies):
    async def on_command(self, update: Update, context: Ctx) -> None:
        msg = update.effective_message
        user = update.effective_user
        if msg is None or not msg.text:
            return
        name = msg.text.split()[0].lstrip("/").split("@")[0].lower()
        args = list(context.args or [])
        decision = await self.decide(user.id if user else None, GATE_VERBS.get(name, VIEW))
        if user is None or isinstance(decision, Refused):
            reason = decision.reason if isinstance(decision, Refused) else "unknown sender"
            await self._refuse(update, f"command:{name}", reason)
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
                skipped(update)
        elif name == "fix":
            if len(args) < 2 or not INCIDENT_ID.fullmatch(args[0]):  # not isdigit: "²" is one
                await self.say(chat, "Usage: <code>/fix ID COMMAND</code>", update=update)
                return
            fix = msg.text.split(None, 2)[2]
            await self._fix(update, int(args[0].lstrip("#"), 10), fix.strip())
        elif name == "ack":
            if len(args) != 1 or not INCIDENT_ID.fullmatch(args[0]):
                await self.say(chat, "Usage: <code>/ack ID</code>", update=update)
                return
            said = await asyncio.to_thread(ack_command, self.db, self.auth, user.id, args[0])
            await self.say(chat, esc(said), update=update)
        elif name == "mute":
            await self._mute(chat, user.id, args, update)
        elif name == "unmute":
            if len(args) != 1:
                await self.say(chat, "Usage: <code>/unmute TARGET</code>", update=update)
                return
            n = await asyncio.to_thread(
                mutes.unmute, self.db, args[0], telegram_actor(user.id).name
            )
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
        row = await asyncio.to_thread(
            mutes.mute, self.db, args[0], seconds, telegram_actor(uid).name
        )
        await self.say(
            chat,
            f"Muted {esc(args[0])} until {row.until:%Y-%m-%d %H:%M} UTC: its "
            "incidents are recorded, not announced or remediated.",
            update=update,
        )
