"""The slash commands: ``/help``, ``/status``, ``/incidents``, ``/skills`` (the gate's
``view``), ``/report`` (asks for one now: ``report``), ``/fix``, ``/ack``, ``/mute`` and
``/unmute``. Each sender passes the gate first; the texts come from ``commands``.

Tested through every channel by tests/notify/test_inbound_contract.py.
"""

from __future__ import annotations

import asyncio
import re

from sqlalchemy.exc import IntegrityError

from guard.domain.durations import parse_duration
from guard.incidents.gate import UNMUTE, VIEW, Refused
from guard.notify.answers.ackpress import ack_command
from guard.notify.answers.base import skipped
from guard.notify.answers.commands import help_text, incidents_text, skills_text, status_text
from guard.notify.answers.replies import Replies
from guard.notify.answers.senders import UserId
from guard.notify.inbound import Inbound
from guard.store import mutes

INCIDENT_ID = re.compile(r"#?[0-9]{1,12}", re.ASCII)
COMMANDS: tuple[str, ...] = ("status", "incidents", "skills", "mute", "unmute", "report")
COMMANDS += ("help", "start", "fix", "ack")
"""The commands a channel routes here (``Answers.command``)."""
GATE_VERBS = {
    "fix": "reply",
    "mute": "mute",
    "unmute": UNMUTE,
    "report": "report",
    "ack": "ack",
}  # the rest: view


class SlashCommands(Replies):
    async def command(self, event: Inbound) -> None:
        """A slash command: the gate first, then its answer."""
        user, name, args = event.user, event.command, event.args
        if not event.text or event.chat is None:
            return
        decision = await self.decide(user, GATE_VERBS.get(name, VIEW))
        if user is None or isinstance(decision, Refused):
            reason = decision.reason if isinstance(decision, Refused) else "unknown sender"
            await self._refuse(event, f"command:{name}", reason)
            return
        chat, gw, m = event.chat, self.gw, self.markup
        if name in ("help", "start"):
            await self.say(chat, help_text(m), event=event)
        elif name == "status":
            text = await asyncio.to_thread(status_text, self.db, gw.runtime, m)
            await self.say(chat, text, event=event)
        elif name == "incidents":
            await self.say(chat, await asyncio.to_thread(incidents_text, self.db, m), event=event)
        elif name == "skills":
            await self.say(chat, await asyncio.to_thread(skills_text, gw.settings, m), event=event)
        elif name == "report":
            try:
                await gw.send_report(chat, also=event.handled().mark)
            except IntegrityError:
                skipped(event)
        elif name == "fix":
            if len(args) < 2 or not INCIDENT_ID.fullmatch(args[0]):  # not isdigit: "²" is one
                await self.say(chat, f"Usage: {m.code('/fix ID COMMAND')}", event=event)
                return
            fix = event.text.split(None, 2)[2]
            await self._fix(event, int(args[0].lstrip("#"), 10), fix.strip())
        elif name == "ack":
            if len(args) != 1 or not INCIDENT_ID.fullmatch(args[0]):
                await self.say(chat, f"Usage: {m.code('/ack ID')}", event=event)
                return
            said = await asyncio.to_thread(ack_command, self.db, self.auth, user, args[0])
            await self.say(chat, m.escape(said), event=event)
        elif name == "mute":
            await self._mute(chat, user, args, event)
        elif name == "unmute":
            if len(args) != 1:
                await self.say(chat, f"Usage: {m.code('/unmute TARGET')}", event=event)
                return
            n = await asyncio.to_thread(mutes.unmute, self.db, args[0], self.actor(user).name)
            await self.say(
                chat,
                f"Unmuted {m.escape(args[0])} ({n} mute(s) ended)."
                if n
                else f"{m.escape(args[0])} was not muted.",
                event=event,
            )

    async def _mute(self, chat: str, uid: UserId, args: list[str], event: Inbound) -> None:
        m = self.markup
        try:
            if len(args) != 2:
                raise ValueError("two arguments")
            seconds = parse_duration(args[1])
        except ValueError:
            await self.say(
                chat,
                f"Usage: {m.code('/mute TARGET DURATION')}, e.g. {m.code('/mute api 2h')}",
                event=event,
            )
            return
        row = await asyncio.to_thread(mutes.mute, self.db, args[0], seconds, self.actor(uid).name)
        await self.say(
            chat,
            f"Muted {m.escape(args[0])} until {row.until:%Y-%m-%d %H:%M} UTC: its "
            "incidents are recorded, not announced or remediated.",
            event=event,
        )
