"""The Notifier port over the durable outbox, for one channel or several at once.

``ChannelNotifier`` never talks to its channel itself: ``ask`` queues the incident message with
its buttons, ``update`` queues an edit of that message (its buttons go away) and the outcome as
a reply in its thread (for an incident of a grouped message, only the edit of its line),
``send_text`` queues plain text, each rendered by the channel's ``Markup``. The channel's worker
delivers them. Because it only writes rows, it works the same in ``guard run`` and in a CLI
process, and it cannot fail because the channel is down.

``FanOut`` hands one incident event to every configured channel. Each channel has its own rows
and its own worker, so one that is down, slow or refusing never blocks or duplicates another.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from loguru import logger

from guard.notify.base import HumanRequest, IncidentUpdate, JoinAware, Notifier
from guard.notify.channel import Markup
from guard.notify.outbox import queue
from guard.notify.relatedline import related_line, with_related
from guard.store.db import Database
from guard.store.models import Incident
from guard.triage.correlation import related_of


class ChannelNotifier:
    """A Notifier that queues a channel's messages for its chats: ``chat_id`` (the default:
    plain text, and incidents no route sends elsewhere), and ``chats_for(incident)`` when given
    (the routed chats, ``guard.notify.routing``), each with its own rows."""

    def __init__(
        self,
        db: Database,
        channel: str,
        chat_id: int | str,
        markup: Markup,
        chats_for: Callable[[Incident], list[str]] | None = None,
    ) -> None:
        self.db = db
        self.channel = channel
        self.chat_id = str(chat_id)
        self.markup = markup
        self.chats_for = chats_for

    async def ask(self, request: HumanRequest) -> None:
        with self.db.session() as session:
            inc = session.get(Incident, request.incident_id)
            related = related_of(session, request.incident_id)
        text, buttons = self.markup.request(request, inc.message if inc else "")
        if related:  # born with the line: no edit to race the post (``notify.related``)
            text = self.markup.cut(with_related(text, self.markup.escape(related_line(related))))
        chats = (self.chats_for(inc) if inc is not None and self.chats_for else []) or [
            self.chat_id
        ]
        for chat in chats:
            await self._send(
                text, chat, buttons=buttons, incident_id=request.incident_id, role="incident"
            )
        logger.info(
            "incident #{}: asked on {} ({} chat(s))", request.incident_id, self.channel, len(chats)
        )

    def asked_in(self, incident_id: int) -> list[str]:
        """The chats this channel asked about an incident in (the default chat if none)."""
        return queue.asked_in(self.db, self.channel, incident_id, self.chat_id)

    def closed_text(self, incident_id: int, state: str, text: str) -> str:
        """The question's text once it is over: its header (with the related signals that
        joined it, as the open question showed them), then what became of it."""
        with self.db.session() as session:
            inc = session.get(Incident, incident_id)
            related = related_of(session, incident_id)
        header = (
            self.markup.header(incident_id, inc.title, inc.severity, inc.target, inc.count)
            if inc
            else f"Incident #{incident_id}"
        )
        if related:
            header += "\n" + self.markup.escape(related_line(related))
        return self.markup.closed(header, state, text)

    async def update(self, update: IncidentUpdate) -> None:
        """Close the question and reply in its thread, in every chat it was asked in."""
        closed = self.closed_text(update.incident_id, update.state, update.text)
        for chat in await asyncio.to_thread(self.asked_in, update.incident_id):
            await asyncio.to_thread(
                queue.close_question,
                self.db,
                self.channel,
                chat_id=chat,
                text=closed,
                incident_id=update.incident_id,
            )
            target = await asyncio.to_thread(
                queue.incident_message, self.db, self.channel, chat, update.incident_id
            )
            if target is not None and target.role == "group":
                continue  # its line in the grouped message says it; no post per incident
            text = self.markup.update(update)
            await self._send(
                text, chat, incident_id=update.incident_id, role="reply", reply_to_incident=True
            )

    async def flush(self) -> None:
        """Nothing waits here: grouping happens in the outbox, which survives a stop."""

    async def send_text(self, text: str) -> None:
        await self._send(text, self.chat_id)

    async def _send(self, text: str, chat: str, **call: Any) -> None:
        await asyncio.to_thread(
            queue.enqueue,
            self.db,
            self.channel,
            method="send",
            chat_id=chat,
            text=text,
            **call,
        )


class FanOut:
    """One Notifier over several: every event goes to each of them, whatever the others do."""

    def __init__(self, notifiers: Sequence[Notifier]) -> None:
        self.notifiers = list(notifiers)

    async def _each(self, call: str, *args: object, among: Sequence[object] | None = None) -> None:
        notifiers = self.notifiers if among is None else among
        results = await asyncio.gather(
            *(getattr(n, call)(*args) for n in notifiers), return_exceptions=True
        )
        failed = [r for r in results if isinstance(r, BaseException)]
        for exc in failed:
            logger.warning("a channel failed to take {}: {}", call, exc)
        if failed and len(failed) == len(results):
            raise failed[0]

    async def ask(self, request: HumanRequest) -> None:
        await self._each("ask", request)

    async def update(self, update: IncidentUpdate) -> None:
        await self._each("update", update)

    async def send_text(self, text: str) -> None:
        await self._each("send_text", text)

    async def flush(self) -> None:
        await self._each("flush")

    async def joined(self, incident_id: int) -> None:
        aware = [n for n in self.notifiers if isinstance(n, JoinAware)]
        await self._each("joined", incident_id, among=aware)
