"""A send cut short (Telegram posted it, Guard died before storing its id) is found, not posted
again; and the Bot API server answers edits as Telegram does, which is what finding it relies on.

Guard's death is simulated in process: the send is begun (committed in flight) and made to the
server exactly as the worker makes it, and a new worker recovers. ``bench.crash`` does the same
with SIGKILL on a real ``guard run`` (``telegram-fix`` at ``outbox.sent_before_id``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select
from telegram import Bot
from telegram.constants import ParseMode

from guard.notify.telegram import grouping, inflight, outbox
from guard.notify.telegram.inflight import markup
from guard.notify.telegram.outbox import OutboxWorker
from guard.store.db import Database, open_database
from guard.store.models import (
    ChannelMessage,
    InFlight,
    MessageGroupMember,
    OutboxMessage,
    OutboxStatus,
)
from tests.fakes.telegram import NOT_MODIFIED, TelegramServer
from tests.helpers.telegram import ADMIN, CHAT, TOKEN
from tests.telegram.test_telegram_limits import call, refused

pytestmark = pytest.mark.unit

QUESTION = "<b>Incident #1</b> [critical]: api down"
BUTTONS = [[["▶ Run web-fix", "a" * 22]], [["✖ Deny", "d" * 22]]]


def keyboard(data: str) -> dict[str, Any]:
    return {"inline_keyboard": [[{"text": "press", "callback_data": data}]]}


def test_message_ids_are_one_sequence_per_chat_shared_by_users_and_the_bot(tg):
    _, first = call(tg, "sendMessage", chat_id=CHAT, text="one")
    human = tg.say(ADMIN, "hello", chat_id=CHAT)
    _, second = call(tg, "sendMessage", chat_id=CHAT, text="two")
    _, elsewhere = call(tg, "sendMessage", chat_id=CHAT + 1, text="other chat")
    assert first["result"]["message_id"] == 1 and second["result"]["message_id"] == 3
    assert tg.updates[-1]["update_id"] == human and tg.updates[-1]["message"]["message_id"] == 2
    assert elsewhere["result"]["message_id"] == 1


def test_edits_answer_as_telegram_does(tg):
    _, sent = call(tg, "sendMessage", chat_id=CHAT, text="<b>x</b>", parse_mode="HTML")
    mid = sent["result"]["message_id"]
    tg.say(ADMIN, "a human's message", chat_id=CHAT)
    edit: dict[str, Any] = {"chat_id": CHAT, "parse_mode": "HTML"}
    assert refused(tg, "editMessageText", message_id=mid + 1, text="y", **edit) == (
        "Bad Request: message can't be edited"
    )
    assert refused(tg, "editMessageText", message_id=mid + 2, text="y", **edit) == (
        "Bad Request: message to edit not found"
    )
    assert refused(tg, "editMessageText", message_id=mid, text="<b>x</b>", **edit) == (
        f"Bad Request: {NOT_MODIFIED}"
    )
    # "not modified" only if the content and the markup are the same: else the edit goes through
    assert call(tg, "editMessageText", message_id=mid, text="<b>x</b>", chat_id=CHAT)[0] == 200
    same = {"message_id": mid, "text": "<b>x</b>", "reply_markup": keyboard("k1"), **edit}
    assert call(tg, "editMessageText", **same)[0] == 200
    assert refused(tg, "editMessageText", **same) == f"Bad Request: {NOT_MODIFIED}"
    assert call(tg, "editMessageText", **{**same, "reply_markup": keyboard("k2")})[0] == 200
    assert refused(tg, "editMessageCaption", message_id=mid, caption="c", **edit) == (
        "Bad Request: there is no caption in the message to edit"
    )
    _, photo = call(tg, "sendPhoto", chat_id=CHAT, photo="file-id", caption="per hour")
    pid = photo["result"]["message_id"]
    assert refused(tg, "editMessageCaption", message_id=pid, caption="per hour", chat_id=CHAT) == (
        f"Bad Request: {NOT_MODIFIED}"
    )
    assert refused(tg, "editMessageText", message_id=pid, text="t", **edit) == (
        "Bad Request: there is no text in the message to edit"
    )
    tg.refused.clear()


@pytest.fixture
async def bot(tg: TelegramServer) -> AsyncIterator[Bot]:
    bot = Bot(TOKEN, base_url=tg.url + "/bot")
    await bot.initialize()
    yield bot
    await bot.shutdown()


@pytest.fixture
def db(tmp_path: Path) -> Database:
    return open_database(f"sqlite:///{tmp_path / 'guard.db'}")


async def sent_before(db: Database, bot: Bot) -> None:
    """Guard sent one message and stored its id: the floor of the next send."""
    outbox.enqueue(db, method="send", chat_id=CHAT, text="an earlier message")
    await OutboxWorker(bot, db).recover()  # nothing in flight: recover sends nothing
    row = outbox.pending(db)[0]
    await OutboxWorker(bot, db)._deliver(row)


async def crash_during(
    db: Database, bot: Bot, *, posted: bool, photo: bool = False
) -> OutboxMessage:
    """Queue a message, begin its send (in flight) and, if ``posted``, make the call Telegram
    accepts; then Guard "dies": nothing stores the id."""
    if photo:
        outbox.enqueue(db, method="photo", chat_id=CHAT, text="Incidents per hour", photo=b"png")
    else:
        outbox.enqueue(db, method="send", chat_id=CHAT, text=QUESTION, buttons=BUTTONS)  # type: ignore[arg-type]
    [row] = outbox.pending(db)
    text = row.text
    inflight.begin(db, [row], row.method, text, row.buttons)
    if posted and photo:
        await bot.send_photo(CHAT, photo=b"png", caption=text, parse_mode=ParseMode.HTML)
    elif posted:
        await bot.send_message(CHAT, text, parse_mode=ParseMode.HTML, reply_markup=markup(BUTTONS))
    return row


def state(db: Database, row: OutboxMessage) -> tuple[OutboxStatus, list[str], int]:
    with db.session() as s:
        fresh = s.get(OutboxMessage, row.id)
        assert fresh is not None
        ids = [m.message_id for m in s.exec(select(ChannelMessage)).all()]
        left = len(s.exec(select(InFlight)).all())
    return fresh.status, ids, left


async def test_a_send_telegram_took_before_guard_died_is_adopted_not_posted_again(tg, bot, db):
    await sent_before(db, bot)  # 1
    tg.say(ADMIN, "anyone looking?", chat_id=CHAT)  # 2: a human's, between
    row = await crash_during(db, bot, posted=True)  # 3
    assert state(db, row)[0] == OutboxStatus.in_flight
    posts = len(tg.sent("sendMessage"))

    await OutboxWorker(bot, db).recover()  # the restarted Guard

    assert len(tg.sent("sendMessage")) == posts  # nothing posted again
    assert len(tg.bot_messages("Incident #1")) == 1
    assert state(db, row) == (OutboxStatus.sent, ["1", "3"], 0)
    probes = [int(c["params"]["message_id"]) for c in tg.sent("editMessageText")]
    assert probes == [2, 3]  # the human's message (can't be edited), then Guard's own
    # a reply to it now reaches its incident: the id is stored
    assert outbox.pending(db) == []


async def test_a_send_that_never_reached_telegram_is_sent_once_after_a_bounded_probe(tg, bot, db):
    await sent_before(db, bot)  # 1
    tg.say(ADMIN, "anyone looking?", chat_id=CHAT)  # 2
    row = await crash_during(db, bot, posted=False)

    await OutboxWorker(bot, db).recover()

    assert len(tg.bot_messages("Incident #1")) == 1
    assert state(db, row) == (OutboxStatus.sent, ["1", "3"], 0)
    probes = [int(c["params"]["message_id"]) for c in tg.sent("editMessageText")]
    assert probes == list(range(2, 3 + inflight.MISSES))  # stops after MISSES not found


async def test_a_chart_in_flight_is_found_by_its_caption(tg, bot, db):
    await sent_before(db, bot)
    row = await crash_during(db, bot, posted=True, photo=True)
    await OutboxWorker(bot, db).recover()
    assert len([m for m in tg.bot_messages() if "photo" in m]) == 1
    assert state(db, row) == (OutboxStatus.sent, ["1", "2"], 0)
    assert [int(c["params"]["message_id"]) for c in tg.sent("editMessageCaption")] == [2]


async def test_a_send_that_timed_out_stays_in_flight_and_is_looked_for_before_a_retry(tg, bot, db):
    await sent_before(db, bot)
    row = await crash_during(db, bot, posted=True)
    worker = OutboxWorker(bot, db)
    worker.delivery.attempted(row, "timed out", uncertain=True)  # what a NetworkError leaves
    assert state(db, row)[0] == OutboxStatus.in_flight
    [again] = outbox.pending(db)
    await worker._recover(again)
    assert len(tg.bot_messages("Incident #1")) == 1
    assert state(db, row)[0] == OutboxStatus.sent


async def test_a_grouped_announcement_in_flight_is_adopted_for_all_its_incidents(tg, bot, db):
    await sent_before(db, bot)  # 1
    for incident in (1, 2):
        outbox.enqueue(
            db,
            method="send",
            chat_id=CHAT,
            text=f"<b>Incident #{incident}</b>",
            buttons=[[("✖ Deny", f"{incident}" * 22)]],
            incident_id=incident,
            role="incident",
        )
    rows = outbox.pending(db)
    members = [
        MessageGroupMember(
            channel="telegram",
            chat_id=str(CHAT),
            message_id="",
            incident_id=r.incident_id,
            text=grouping.member_line(None, r.incident_id),
            buttons=grouping.labelled(r.incident_id, r.buttons),
        )
        for r in rows
        if r.incident_id is not None
    ]
    text, buttons = grouping.render(members)  # as the worker renders a group
    inflight.begin(db, rows, "send", text, buttons)
    await bot.send_message(CHAT, text, parse_mode=ParseMode.HTML, reply_markup=markup(buttons))

    await OutboxWorker(bot, db).recover()

    assert len(tg.sent("sendMessage")) == 2  # the earlier message and the group, once
    assert [state(db, r)[0] for r in rows] == [OutboxStatus.sent] * 2
    with db.session() as s:
        group = s.exec(select(ChannelMessage).where(ChannelMessage.role == "group")).one()
        stored = s.exec(select(MessageGroupMember)).all()
    assert group.message_id == "2" and [m.message_id for m in stored] == ["2", "2"]
