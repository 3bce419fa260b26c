"""``TelegramNotifier``: the Notifier port on top of the durable outbox.

It never talks to Telegram itself: ``ask`` queues the incident message with its buttons,
``update`` queues an edit of that message (its buttons go away) and the outcome as a reply in
its thread (for an incident of a grouped message, only the edit of its line), ``send_text``
queues plain text. The gateway's worker delivers them. Because it only writes rows, it works
the same in ``guard run`` and in a CLI process, and it cannot fail because Telegram is down.
"""

from __future__ import annotations

import asyncio

from loguru import logger

from guard.config import Settings
from guard.notify.base import HumanRequest, IncidentUpdate
from guard.notify.telegram import outbox
from guard.notify.telegram.messages import (
    incident_header,
    render_closed,
    render_request,
    render_update,
)
from guard.store.db import Database
from guard.store.models import Incident


class TelegramNotifier:
    def __init__(self, settings: Settings, db: Database) -> None:
        assert settings.telegram.chat_id is not None
        self.chat_id = str(settings.telegram.chat_id)
        self.db = db

    async def ask(self, request: HumanRequest) -> None:
        with self.db.session() as session:
            inc = session.get(Incident, request.incident_id)
        text, buttons = render_request(request, inc.message if inc else "")
        await asyncio.to_thread(
            outbox.enqueue,
            self.db,
            method="send",
            chat_id=self.chat_id,
            text=text,
            buttons=buttons,
            incident_id=request.incident_id,
            role="incident",
        )
        logger.info("incident #{}: asked on Telegram", request.incident_id)

    def closed_text(self, incident_id: int, state: str, text: str) -> str:
        with self.db.session() as session:
            inc = session.get(Incident, incident_id)
        header = (
            incident_header(incident_id, inc.title, inc.severity, inc.target, inc.count)
            if inc
            else f"<b>Incident #{incident_id}</b>"
        )
        return render_closed(header, state, text)

    async def update(self, update: IncidentUpdate) -> None:
        closed = self.closed_text(update.incident_id, update.state, update.text)
        await asyncio.to_thread(
            outbox.close_question,
            self.db,
            chat_id=self.chat_id,
            text=closed,
            incident_id=update.incident_id,
        )
        target = await asyncio.to_thread(
            outbox.incident_message, self.db, self.chat_id, update.incident_id
        )
        if target is not None and target.role == "group":
            return  # its line in the grouped message says it; no post per incident
        await asyncio.to_thread(
            outbox.enqueue,
            self.db,
            method="send",
            chat_id=self.chat_id,
            text=render_update(update),
            incident_id=update.incident_id,
            role="reply",
            reply_to_incident=True,
        )

    async def flush(self) -> None:
        """Nothing waits here: grouping happens in the outbox, which survives a stop."""

    async def send_text(self, text: str) -> None:
        await asyncio.to_thread(
            outbox.enqueue, self.db, method="send", chat_id=self.chat_id, text=text
        )
