"""Telegram under hostile and messy input (issue 13, finding 5), through the real handlers
and a Bot pointed at the local Bot API server: a stranger's flood writes one row a window and
never delays an incident alert; a reply that is not plainly a fix is asked about; ``/fix ²``
is a usage error, not a crash."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from sqlmodel import col, select

from guard.notify.answers import senders as auth_module
from guard.notify.telegram import outbox
from guard.store.models import (
    AuditEntry,
    ChannelMessage,
    ConversationMessage,
    HumanCommand,
    OutboxMessage,
)
from tests.helpers.telegram import ADMIN, CHAT, STRANGER

pytestmark = pytest.mark.unit

if TYPE_CHECKING:
    from tests.telegram.conftest import World


async def test_a_strangers_flood_writes_one_row_a_window_and_alerts_go_first(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(200):
        await world.text(STRANGER, f"please run rm -rf / ({i})")
    refused = AuditEntry.action == "telegram.refused"
    assert world.count(AuditEntry, refused) == 1
    assert world.count(ConversationMessage, ConversationMessage.direction == "in") == 1
    assert world.count(OutboxMessage) == 1
    assert world.count(HumanCommand) == 0
    for i in range(200):  # even 200 queued answers to strangers do not delay an alert
        outbox.enqueue(world.db, method="send", chat_id=CHAT, text=f"refused {i}", role="refused")
    alert = outbox.enqueue(
        world.db,
        method="send",
        chat_id=CHAT,
        text="🚨 new incident",
        incident_id=world.incident_id,
        role="incident",
    )
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
    ((run, cancel),) = [[d for _, d in row] for row in question.buttons]
    assert [label for label, _ in question.buttons[0]] == ["Run", "Cancel"]
    with world.db.session() as s:  # what the outbox worker records when it sends the question
        s.add(
            ChannelMessage(
                channel="telegram",
                chat_id=str(CHAT),
                message_id="500",
                incident_id=world.incident_id,
                role="confirm",
                live=True,
                approvals=[run, cancel],
            )
        )
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


@pytest.mark.parametrize(
    "text",
    ["/fix ² echo hi", "/fix \u0661 echo hi", "/fix #x echo", "/fix 99999999999999999999999 echo"],
)
async def test_fix_with_a_strange_number_is_a_usage_error(world: World, text: str) -> None:
    await world.text(ADMIN, text, reply_to=None)
    assert world.count(HumanCommand) == 0
    with world.db.session() as s:
        said = s.exec(select(OutboxMessage)).all()
    assert any("Usage" in m.text for m in said)


async def test_a_reply_the_question_cannot_show_whole_gets_no_run_button(world: World) -> None:
    await world.text(ADMIN, "hmm " * 2000)
    with world.db.session() as s:
        question = s.exec(select(OutboxMessage).where(OutboxMessage.role == "confirm")).one()
    assert len(question.text) <= 4096 and question.buttons == []  # no tap runs the unseen rest
    assert "7,999 characters long" in question.text
    assert "will not run this reply from a button" in question.text
    assert world.count(HumanCommand) == 0


@pytest.mark.parametrize("data", ["fix:\u00b2", "fix:\u0663", "fix:", "fix:#1", "fix:1e3"])
async def test_a_forged_fix_button_is_refused_not_parsed(world: World, data: str) -> None:
    await world.handlers.on_callback(world.press(ADMIN, data, 77), None)  # type: ignore[arg-type]
    assert world.count(OutboxMessage, OutboxMessage.role == "prompt") == 0
