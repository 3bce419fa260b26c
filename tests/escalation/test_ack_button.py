"""The question's Acknowledge button, pressed through the real Telegram handlers (updates as the
Bot API sends them, answers to the local Bot API server): an operator's press acknowledges and
leaves the question's other buttons live; a viewer's is refused and audited; a second press is
refused as answered. The button is on the question only when escalation is configured."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sqlmodel import select
from telegram import Bot

from guard.config import Settings
from guard.domain.records import utcnow
from guard.notify.base import HumanRequest
from guard.notify.outbox import queue
from guard.notify.running_gate import gate_from_settings
from guard.notify.telegram.handlers import Handlers
from guard.notify.telegram.messages import render_request
from guard.notify.telegram.senders import Authoriser
from guard.store.db import open_database
from guard.store.escalation import IncidentAck
from guard.store.models import Approval, AuditEntry, ChannelMessage, IncidentState, OutboxMessage
from tests.fakes.telegram import TelegramServer
from tests.helpers.agent import stored_incident
from tests.helpers.telegram import CHAT, TOKEN
from tests.telegram.conftest import INCIDENT_MESSAGE, World

OPERATOR, VIEWER = 7, 8


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    server = TelegramServer(TOKEN).start()
    settings = Settings(
        data_dir=tmp_path,
        telegram={"allowed_user_ids": []},
        access={"telegram": {str(OPERATOR): "operator", str(VIEWER): "viewer"}},
        escalation={"remind_every": "15m"},
    )
    db = open_database(settings.database_url)
    with db.session() as s:
        inc = stored_incident(s, IncidentState.awaiting_human)
        for kind in ("ack", "deny"):
            s.add(
                Approval(
                    id=f"{kind}-1",
                    incident_id=inc.id,
                    kind=kind,
                    expires_at=utcnow() + timedelta(hours=1),
                )
            )
        s.add(
            ChannelMessage(
                channel="telegram",
                chat_id=str(CHAT),
                message_id=str(INCIDENT_MESSAGE),
                incident_id=inc.id,
                role="incident",
                live=True,
                approvals=["ack-1", "deny-1"],
            )
        )
        incident_id = int(inc.id)
    queue.enqueue(  # the question's row: where acknowledgements are told
        db,
        "telegram",
        method="send",
        chat_id=CHAT,
        text="?",
        role="incident",
        incident_id=incident_id,
    )
    gateway = SimpleNamespace(
        db=db,
        auth=Authoriser(settings.telegram, db, gate_from_settings(settings, db)),
        settings=settings,
        chat_id=CHAT,
        runtime=None,
        notifier=None,
    )
    bot = Bot(TOKEN, base_url=server.url + "/bot")
    await bot.initialize()
    try:
        w = World(Handlers(gateway), db, bot, incident_id)  # type: ignore[arg-type]
        w.server = server  # type: ignore[attr-defined]
        yield w
    finally:
        await bot.shutdown()
        server.stop()


async def press(world: World, user: int, data: str) -> str:
    before = len(world.server.sent("answerCallbackQuery"))  # type: ignore[attr-defined]
    await world.handlers.on_callback(world.press(user, data, INCIDENT_MESSAGE), SimpleNamespace())  # type: ignore[arg-type]
    answered = world.server.sent("answerCallbackQuery")  # type: ignore[attr-defined]
    assert len(answered) == before + 1
    return str(answered[-1]["params"].get("text", ""))


async def test_an_operator_acknowledges_and_the_question_stays_open(world: World) -> None:
    said = await press(world, OPERATOR, "ack-1")
    assert said == f"Acknowledged by telegram:{OPERATOR}: escalation and reminders stop."
    with world.db.session() as s:
        ack = s.get(IncidentAck, (world.incident_id, 0))
        assert ack is not None and ack.by == f"telegram:{OPERATOR}" and ack.channel == "telegram"
        assert s.get(Approval, "ack-1").used_at is not None  # type: ignore[union-attr]
        assert s.get(Approval, "deny-1").used_at is None  # type: ignore[union-attr]
        msg = s.exec(select(ChannelMessage)).one()
        assert msg.live  # approve, deny, a fix: still possible
        told = s.exec(select(OutboxMessage).where(OutboxMessage.role == "reply")).one()
        pressed = s.exec(select(AuditEntry).where(AuditEntry.action == "telegram.pressed")).one()
    assert told.reply_to_incident and told.text.startswith("Acknowledged by")
    assert pressed.data["kind"] == "ack"
    assert await press(world, OPERATOR, "ack-1") == f"Already acknowledged by telegram:{OPERATOR}"


async def test_a_viewer_is_refused(world: World) -> None:
    said = await press(world, VIEWER, "ack-1")
    assert said == "Refused: needs operator; you are viewer"
    with world.db.session() as s:
        assert s.get(IncidentAck, (world.incident_id, 0)) is None
        assert s.get(Approval, "ack-1").used_at is None  # type: ignore[union-attr]
        refused = s.exec(select(AuditEntry).where(AuditEntry.action == "telegram.refused")).one()
    assert refused.actor == f"telegram:{VIEWER}" and "operator" in refused.data["reason"]


def test_the_button_is_on_the_question_when_escalation_is_configured() -> None:
    req: dict[str, Any] = dict(
        incident_id=3, title="t", severity="critical", target="x", count=1, evidence="", deny_id="d"
    )
    _, with_ack = render_request(HumanRequest(**req, ack_id="a"))
    _, without = render_request(HumanRequest(**req))
    assert ("✋ Acknowledge", "a") in [b for row in with_ack for b in row]
    assert all(data != "a" for row in without for _, data in row)


async def test_ack_as_a_slash_command(world: World) -> None:
    await world.text(VIEWER, f"/ack {world.incident_id}", reply_to=None)
    await world.text(OPERATOR, f"/ack {world.incident_id}", reply_to=None)
    await world.text(OPERATOR, f"/ack #{world.incident_id}", reply_to=None)
    await world.text(OPERATOR, "/ack soon", reply_to=None)
    with world.db.session() as s:
        ack = s.get(IncidentAck, (world.incident_id, 0))
        said = [
            r.text
            for r in s.exec(select(OutboxMessage).where(OutboxMessage.role != "incident")).all()
        ]
    assert ack is not None and ack.by == f"telegram:{OPERATOR}"
    i = world.incident_id
    assert said == [
        "⛔ Refused: needs operator; you are viewer.",
        f"Acknowledged by telegram:{OPERATOR}: escalation and reminders stop.",  # the thread
        f"Incident #{i} acknowledged by telegram:{OPERATOR}: escalation and reminders stop.",
        f"Incident #{i} was already acknowledged by telegram:{OPERATOR}.",
        "Usage: <code>/ack ID</code>",
    ]
