"""The real Telegram handlers driven in-process: updates built as the Bot API sends them, a Bot
pointed at the local Bot API server (for ``answerCallbackQuery``), a real database, and a
gateway holding only what handlers read (the ``world`` fixture of tests/telegram/)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sqlmodel import func, select
from telegram import Bot, Update

from guard.config import Settings, TelegramSettings
from guard.domain.records import utcnow
from guard.notify.telegram.handlers import Handlers
from guard.notify.telegram.senders import Authoriser
from guard.store.db import Database, open_database
from guard.store.models import Approval, ChannelMessage, IncidentState
from tests.fakes.telegram import TelegramServer
from tests.helpers.agent import stored_incident
from tests.helpers.telegram import ADMIN, CHAT, TOKEN

INCIDENT_MESSAGE = 77


class World:
    def __init__(self, handlers: Handlers, db: Database, bot: Bot, incident_id: int) -> None:
        self.handlers, self.db, self.bot, self.incident_id = handlers, db, bot, incident_id
        self._next = 1000

    def update(self, payload: dict[str, Any]) -> Update:
        self._next += 1
        return Update.de_json({"update_id": self._next, **payload}, self.bot)

    def message(self, user: int, text: str, *, reply_to: int | None = None) -> Update:
        self._next += 1
        msg: dict[str, Any] = {
            "message_id": self._next,
            "date": int(time.time()),
            "chat": {"id": CHAT, "type": "group"},
            "from": {"id": user, "is_bot": False, "first_name": "u"},
            "text": text,
        }
        if text.startswith("/"):
            msg["entities"] = [{"type": "bot_command", "offset": 0, "length": len(text.split()[0])}]
        if reply_to is not None:
            msg["reply_to_message"] = {
                "message_id": reply_to,
                "date": int(time.time()),
                "chat": {"id": CHAT, "type": "group"},
                "text": "#1",
            }
        return self.update({"message": msg})

    def press(self, user: int, data: str, message_id: int) -> Update:
        return self.update(
            {
                "callback_query": {
                    "id": f"cq{time.monotonic_ns()}",
                    "chat_instance": "ci",
                    "data": data,
                    "from": {"id": user, "is_bot": False, "first_name": "u"},
                    "message": {
                        "message_id": message_id,
                        "date": int(time.time()),
                        "chat": {"id": CHAT, "type": "group"},
                        "text": "?",
                    },
                }
            }
        )

    async def text(self, user: int, text: str, *, reply_to: int | None = INCIDENT_MESSAGE) -> None:
        update = self.message(user, text, reply_to=reply_to)
        await self.handlers.remember(update, SimpleNamespace())  # type: ignore[arg-type]
        if text.startswith("/"):
            ctx = SimpleNamespace(args=text.split()[1:])
            await self.handlers.on_command(update, ctx)  # type: ignore[arg-type]
        else:
            await self.handlers.on_text(update, SimpleNamespace())  # type: ignore[arg-type]

    def button(self, approval_id: str, kind: str, skill: str | None = None) -> None:
        """A live button of ``kind`` (skill, deny, mute) on the incident's message."""
        with self.db.session() as s:
            s.add(
                Approval(
                    id=approval_id,
                    incident_id=self.incident_id,
                    kind=kind,
                    skill=skill,
                    expires_at=utcnow() + timedelta(hours=1),
                )
            )
            msg = s.exec(select(ChannelMessage)).one()
            msg.approvals = [*msg.approvals, approval_id]
            s.add(msg)

    def count(self, table: Any, *where: Any) -> int:
        with self.db.session() as s:
            return int(s.exec(select(func.count()).select_from(table).where(*where)).one())


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    server = TelegramServer(TOKEN).start()
    settings = Settings(
        data_dir=tmp_path,
        skills_dir=tmp_path / "skills",
        playbooks_dir=tmp_path / "playbooks",
        telegram=TelegramSettings(allowed_user_ids=[ADMIN]),
    )
    db = open_database(settings.database_url)
    with db.session() as s:
        inc = stored_incident(s, IncidentState.awaiting_human)
        s.add(
            ChannelMessage(
                channel="telegram",
                chat_id=str(CHAT),
                message_id=str(INCIDENT_MESSAGE),
                incident_id=inc.id,
                role="incident",
                live=True,
                approvals=[],
            )
        )
        incident_id = inc.id

    async def send_report(chat_id: str | None = None, also: Any = None) -> None:
        pass  # the daily report has its own tests

    gateway = SimpleNamespace(
        db=db,
        auth=Authoriser(settings.telegram, db),
        settings=settings,
        chat_id=CHAT,
        runtime=None,
        notifier=None,
        send_report=send_report,
    )
    bot = Bot(TOKEN, base_url=server.url + "/bot")
    await bot.initialize()
    try:
        yield World(Handlers(gateway), db, bot, incident_id)  # type: ignore[arg-type]
    finally:
        await bot.shutdown()
        server.stop()
