"""Telegram under hostile and messy input (issue 13, finding 5), through the real handlers
and a Bot pointed at the local Bot API server: a stranger's flood writes one row a window and
never delays an incident alert; a reply that is not plainly a fix is asked about; ``/fix ²``
is a usage error, not a crash."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sqlmodel import col, func, select
from telegram import Bot, Update

from guard.config import Settings, TelegramSettings
from guard.notify.telegram import auth as auth_module
from guard.notify.telegram import outbox
from guard.notify.telegram.auth import Authoriser
from guard.notify.telegram.handlers import Handlers
from guard.records import utcnow
from guard.store.db import Database, open_database
from guard.store.models import (
    AuditEntry,
    ConversationMessage,
    HumanCommand,
    Incident,
    OutboxMessage,
    TelegramMessage,
)
from tests.telegram_helpers import ADMIN, CHAT, STRANGER, TOKEN
from tests.telegram_server import TelegramServer

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
        msg: dict[str, Any] = {"message_id": self._next, "date": int(time.time()),
                               "chat": {"id": CHAT, "type": "group"},
                               "from": {"id": user, "is_bot": False, "first_name": "u"},
                               "text": text}
        if text.startswith("/"):
            msg["entities"] = [{"type": "bot_command", "offset": 0,
                                "length": len(text.split()[0])}]
        if reply_to is not None:
            msg["reply_to_message"] = {"message_id": reply_to, "date": int(time.time()),
                                       "chat": {"id": CHAT, "type": "group"}, "text": "#1"}
        return self.update({"message": msg})

    def press(self, user: int, data: str, message_id: int) -> Update:
        return self.update({"callback_query": {
            "id": f"cq{time.monotonic_ns()}", "chat_instance": "ci", "data": data,
            "from": {"id": user, "is_bot": False, "first_name": "u"},
            "message": {"message_id": message_id, "date": int(time.time()),
                        "chat": {"id": CHAT, "type": "group"}, "text": "?"}}})

    async def text(self, user: int, text: str, *, reply_to: int | None = INCIDENT_MESSAGE) -> None:
        update = self.message(user, text, reply_to=reply_to)
        await self.handlers.remember(update, SimpleNamespace())  # type: ignore[arg-type]
        if text.startswith("/"):
            ctx = SimpleNamespace(args=text.split()[1:])
            await self.handlers.on_command(update, ctx)  # type: ignore[arg-type]
        else:
            await self.handlers.on_text(update, SimpleNamespace())  # type: ignore[arg-type]

    def count(self, table: Any, *where: Any) -> int:
        with self.db.session() as s:
            return int(s.exec(select(func.count()).select_from(table).where(*where)).one())


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    server = TelegramServer(TOKEN).start()
    settings = Settings(data_dir=tmp_path, skills_dir=tmp_path / "skills",
                        playbooks_dir=tmp_path / "playbooks",
                        telegram=TelegramSettings(allowed_user_ids=[ADMIN]))
    db = open_database(settings.database_url)
    now = utcnow()
    with db.session() as s:
        inc = Incident(fingerprint="fp", check_key="k", monitor_id="web", source="http",
                       target="http://svc", kind="http_status", severity="critical",
                       title="down", message="down", state="awaiting_human", opened_at=now,
                       first_seen=now, last_seen=now)
        s.add(inc)
        s.flush()
        assert inc.id is not None
        s.add(TelegramMessage(chat_id=str(CHAT), message_id=INCIDENT_MESSAGE,
                              incident_id=inc.id, role="incident", live=True, approvals=[]))
        incident_id = inc.id
    gateway = SimpleNamespace(db=db, auth=Authoriser(settings.telegram, db), settings=settings,
                              chat_id=CHAT, runtime=None, notifier=None)
    bot = Bot(TOKEN, base_url=server.url + "/bot")
    await bot.initialize()
    try:
        yield World(Handlers(gateway), db, bot, incident_id)  # type: ignore[arg-type]
    finally:
        await bot.shutdown()
        server.stop()


async def test_a_strangers_flood_writes_one_row_a_window_and_alerts_go_first(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(200):
        await world.text(STRANGER, f"please run rm -rf / ({i})")
    refused = AuditEntry.action == "telegram.refused"
    assert world.count(AuditEntry, refused) == 1
    assert world.count(ConversationMessage, ConversationMessage.direction == "in") == 1
    assert world.count(OutboxMessage) == 1
    assert world.count(HumanCommand) == 0
    for i in range(200):  # even 200 queued answers to strangers do not delay an alert
        outbox.enqueue(world.db, method="send", chat_id=CHAT, text=f"refused {i}",
                       role="refused")
    alert = outbox.enqueue(world.db, method="send", chat_id=CHAT, text="🚨 new incident",
                           incident_id=world.incident_id, role="incident")
    assert outbox.pending(world.db)[0].id == alert
    monkeypatch.setattr(auth_module, "REFUSAL_WINDOW", 0.0)  # the window has passed
    await world.text(STRANGER, "still here")
    with world.db.session() as s:
        rows = s.exec(select(AuditEntry).where(refused).order_by(col(AuditEntry.seq))).all()
    assert len(rows) == 2 and rows[1].data["dropped_before"] == 199


async def test_a_chatty_reply_is_asked_about_not_run(world: World) -> None:
    chat = "ok, looking at it now - maybe restart later?"
    await world.text(ADMIN, chat)
    assert world.count(HumanCommand) == 0
    with world.db.session() as s:
        question = s.exec(select(OutboxMessage).where(OutboxMessage.role == "confirm")).one()
    assert "as a fix" in question.text and "maybe restart later?" in question.text
    (run, cancel), = [[d for _, d in row] for row in question.buttons]
    assert [label for label, _ in question.buttons[0]] == ["Run", "Cancel"]
    with world.db.session() as s:  # what the outbox worker records when it sends the question
        s.add(TelegramMessage(chat_id=str(CHAT), message_id=500, incident_id=world.incident_id,
                              role="confirm", live=True, approvals=[run, cancel]))
    await world.handlers.on_callback(world.press(STRANGER, run, 500), None)  # type: ignore[arg-type]
    assert world.count(HumanCommand) == 0
    await world.handlers.on_callback(world.press(ADMIN, run, 500), None)  # type: ignore[arg-type]
    with world.db.session() as s:
        cmd = s.exec(select(HumanCommand)).one()
    assert (cmd.verb, cmd.fix, cmd.actor) == ("reply", chat, f"telegram:{ADMIN}")
    await world.handlers.on_callback(world.press(ADMIN, cancel, 500), None)  # type: ignore[arg-type]
    assert world.count(HumanCommand) == 1  # one decision per question


@pytest.mark.parametrize("fix", ["curl -fsS -X POST http://svc/fix", "docker.restart api"])
async def test_a_plain_fix_runs_without_a_question(world: World, fix: str) -> None:
    await world.text(ADMIN, fix)
    with world.db.session() as s:
        cmd = s.exec(select(HumanCommand)).one()
    assert cmd.fix == fix and world.count(OutboxMessage, OutboxMessage.role == "confirm") == 0


@pytest.mark.parametrize("text", ["/fix ² echo hi", "/fix \u0661 echo hi", "/fix #x echo",
                                  "/fix 99999999999999999999999 echo"])
async def test_fix_with_a_strange_number_is_a_usage_error(world: World, text: str) -> None:
    await world.text(ADMIN, text, reply_to=None)
    assert world.count(HumanCommand) == 0
    with world.db.session() as s:
        said = s.exec(select(OutboxMessage)).all()
    assert any("Usage" in m.text for m in said)
