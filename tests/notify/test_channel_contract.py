"""The Channel port's contract, run against every implementation (as APScheduler 4 runs one
suite against each data store): Telegram against the local Bot API server, Slack against the
local Slack, the console, email against a real SMTP server on 127.0.0.1, and the recording
channel of the test suite. A new channel joins ``SUBJECTS`` and passes the same tests.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from loguru import logger
from sqlmodel import select
from telegram import Bot

from guard.config import EmailSettings
from guard.notify.channel import Channel, Post, Rejected
from guard.notify.console import ConsoleChannel
from guard.notify.email.channel import EmailChannel
from guard.notify.inbound import number
from guard.notify.outbox import queue
from guard.notify.outbox.worker import OutboxWorker
from guard.notify.slack.channel import SlackChannel, client
from guard.notify.telegram.channel import TelegramChannel
from guard.store.db import Database, open_database
from guard.store.models import ChannelMessage, OutboxMessage, OutboxStatus
from tests.fakes.slack import BOT_TOKEN, CHANNEL, SlackServer
from tests.fakes.telegram import TelegramServer
from tests.helpers.mailserver import TO, MailServer
from tests.helpers.telegram import CHAT, TOKEN
from tests.notify.recording import RecordingChannel

SUBJECTS = ["telegram", "slack", "console", "email", "recording"]
BUTTONS = [[("Run web-fix", "a" * 22)], [("Deny", "d" * 22)]]


@dataclass
class Subject:
    channel: Channel
    chat: str
    current: Callable[[str], tuple[str, list[list[tuple[str, str]]]] | None] | None
    """The message as the channel shows it now; None for a channel that only appends."""
    written: Callable[[], str]
    """Everything the channel has shown, as text."""
    finds: bool = False
    """An append-only channel that still finds what it posted (email's journal)."""


def _telegram_current(tg: TelegramServer, chat: str, message_id: str) -> Any:
    msg = tg.messages.get((int(chat), int(message_id)))
    if msg is None:
        return None
    rows = msg.get("reply_markup", {}).get("inline_keyboard", [])
    text = msg.get("text", msg.get("caption", ""))
    return text, [[(b["text"], b["callback_data"]) for b in row] for row in rows]


def _slack_current(slack: SlackServer, message_id: str) -> Any:
    msg = slack.messages.get((CHANNEL, message_id))
    if msg is None:
        return None
    rows = [b["elements"] for b in msg.get("blocks") or [] if b["type"] == "actions"]
    return msg["text"], [[(b["text"]["text"], b["value"]) for b in row] for row in rows]


@pytest.fixture(params=SUBJECTS)
async def subject(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Subject]:
    chat = str(CHAT)
    if request.param == "telegram":
        tg = TelegramServer(TOKEN).start()
        bot = Bot(TOKEN, base_url=tg.url + "/bot")
        await bot.initialize()
        try:
            yield Subject(
                TelegramChannel(bot),
                chat,
                lambda i: _telegram_current(tg, chat, i),
                lambda: "\n".join(str(c["params"]) for c in tg.calls),
            )
        finally:
            await bot.shutdown()
            tg.stop()
    elif request.param == "slack":
        slack = SlackServer().start()
        try:
            yield Subject(
                SlackChannel(client(BOT_TOKEN, slack.url)),
                CHANNEL,
                lambda i: _slack_current(slack, i),
                lambda: "\n".join(str(c["params"]) for c in slack.calls),
            )
        finally:
            slack.stop()
    elif request.param == "console":
        lines: list[str] = []
        sink = logger.add(lines.append, format="{message}")
        try:
            store = open_database(f"sqlite:///{tmp_path / 'guard.db'}")  # the tests' ``db``
            # the console finds what it wrote in conversation memory
            yield Subject(ConsoleChannel(store), chat, None, lambda: "".join(lines), True)
        finally:
            logger.remove(sink)
    elif request.param == "email":
        server = MailServer(tmp_path / "certs").start()
        store = open_database(f"sqlite:///{tmp_path / 'guard.db'}")  # the tests' ``db``
        try:
            email = EmailChannel(EmailSettings.model_validate(server.settings()), store)
            yield Subject(email, TO, None, lambda: "\n".join(map(str, server.received())), True)
        finally:
            server.stop()
    else:
        recording = RecordingChannel(tmp_path / "recording.json")

        def current(i: str) -> Any:
            m = recording.messages().get(i)
            return None if m is None else (m["text"], [[tuple(b) for b in r] for r in m["buttons"]])

        yield Subject(recording, chat, current, lambda: recording.path.read_text())


async def test_a_post_gets_a_new_string_id_and_shows_its_text_and_buttons(subject: Subject):
    first = await subject.channel.post(Post(subject.chat, "api down", BUTTONS))
    second = await subject.channel.post(Post(subject.chat, "db down"))
    assert isinstance(first, str) and isinstance(second, str) and second != first
    assert "api down" in subject.written() and "db down" in subject.written()
    if subject.current is not None:
        assert subject.current(first) == ("api down", BUTTONS)
        assert subject.current(second) == ("db down", [])


async def test_an_edit_replaces_text_and_buttons_and_the_same_edit_again_is_no_error(
    subject: Subject,
):
    message_id = await subject.channel.post(Post(subject.chat, "api down", BUTTONS))
    await subject.channel.edit(subject.chat, message_id, "api healed", [])
    await subject.channel.edit(subject.chat, message_id, "api healed", [])
    assert "api healed" in subject.written()
    if subject.current is not None:
        assert subject.current(message_id) == ("api healed", [])


async def test_an_edit_of_a_message_that_is_not_there_is_rejected(subject: Subject):
    with pytest.raises(Rejected):
        await subject.channel.edit(subject.chat, "4242", "nothing here", [])


async def test_a_reply_and_a_picture_are_new_messages(subject: Subject):
    first = await subject.channel.post(Post(subject.chat, "api down"))
    reply = await subject.channel.post(Post(subject.chat, "healed", reply_to=first))
    picture = await subject.channel.post(Post(subject.chat, "per hour", photo=b"\x89PNG"))
    assert len({first, reply, picture}) == 3
    assert "per hour" in subject.written()


async def test_find_knows_a_post_above_the_floor_and_nothing_else(subject: Subject):
    before = await subject.channel.post(Post(subject.chat, "earlier"))
    posted = Post(subject.chat, "cut short", BUTTONS)
    message_id = await subject.channel.post(posted)
    floor = number(before)  # the highest id Guard knew before the call, where ids are numbers
    found = await subject.channel.find(posted, floor, floor)
    # nothing above the floor (the highest id Guard knew before the call): the post never went
    top = number(message_id)
    never = await subject.channel.find(Post(subject.chat, "never posted"), top, top)
    assert never is None
    if subject.current is not None or subject.finds:  # else it cannot look back: finds none
        assert found == message_id
    else:
        assert found is None


@pytest.fixture
def db(tmp_path: Path) -> Database:
    return open_database(f"sqlite:///{tmp_path / 'guard.db'}")


async def test_the_outbox_groups_announcements_and_edits_them_through_the_channel(
    subject: Subject, db: Database
):
    name, chat = subject.channel.name, subject.chat
    async with _announced(subject, db, {i: f"incident {i} down" for i in (1, 2, 3)}):
        queue.close_question(db, name, chat_id=chat, incident_id=2, text="incident 2\n\nhealed")
    with db.session() as s:
        posted = s.exec(select(ChannelMessage).where(ChannelMessage.channel == name)).all()
        rows = s.exec(select(OutboxMessage)).all()
    assert [m.role for m in posted] == ["incident", "group"]  # the first alone, then a group
    assert {r.status for r in rows} == {OutboxStatus.sent}
    if subject.current is not None:
        shown = subject.current(posted[1].message_id)
        assert shown is not None
        text, buttons = shown
        assert "2 incidents" in text and "healed" in text  # incident 2's line says how
        assert [data for row in buttons for _, data in row] == ["d3" * 4]  # its button went


@contextlib.asynccontextmanager
async def _announced(subject: Subject, db: Database, texts: dict[int, str]) -> AsyncIterator[None]:
    """The incidents' questions (``texts``, by id) through the outbox (``group_wait`` 1 s: the
    first alone, the rest grouped); the body runs once they are out, and the worker runs
    until what the body queued is out too."""
    name, chat = subject.channel.name, subject.chat
    for incident_id, text in texts.items():
        queue.enqueue(
            db, name, method="send", chat_id=chat, text=text,
            buttons=[[("Deny", f"d{incident_id}" * 4)]], incident_id=incident_id,
            role="incident",
        )  # fmt: skip
    stop = asyncio.Event()
    task = asyncio.create_task(OutboxWorker(subject.channel, db, group_wait=1.0).run(stop))
    try:
        await _until(lambda: not queue.pending(db, name), "the announcements")
        yield
        await _until(lambda: not queue.pending(db, name), "what followed")
    finally:
        stop.set()
        await task


async def _until(predicate: Callable[[], bool], what: str, within: float = 30) -> None:
    for _ in range(int(within * 10)):
        if predicate():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


async def test_a_grouped_question_names_its_related_signals_as_they_join(
    subject: Subject, db: Database
):
    """Incident 3 was asked inside a group; a signal joins it: the group message is edited,
    incident 3's line gains the related line, and every button stays."""
    from guard.notify import related
    from guard.notify.telegram import markup  # noqa: F401  (Telegram registers its HTML)
    from guard.store.correlation import RelatedSignal
    from tests.helpers.agent import stored_incident

    name = subject.channel.name
    with db.session() as s:
        ids = [stored_incident(s, fingerprint=f"fp{i}", title=f"down {i}").id for i in range(3)]
    born = "Related signals (1): bad gateway on /var/log/pay.log (x2)"  # asked after a join
    texts = {i: f"incident {i} down\n\nWhat now?" for i in ids}
    texts[ids[1]] = f"incident {ids[1]} down\n{born}\n\nWhat now?"
    async with _announced(subject, db, texts):
        with db.session() as s:
            s.add(
                RelatedSignal(
                    incident_id=ids[2], fingerprint="web", check_key="web", monitor_id="web",
                    source="http", target="http://shop/", kind="http_status",
                    severity="critical", count=4,
                )
            )  # fmt: skip
        assert related.refresh(db, ids[2]) == 1
        await _until(lambda: not queue.pending(db, name), "the edit")
        assert related.refresh(db, ids[2]) == 0  # nothing new: no edit
    with db.session() as s:
        posted = s.exec(select(ChannelMessage).where(ChannelMessage.channel == name)).all()
        rows = s.exec(select(OutboxMessage)).all()
    assert [m.role for m in posted] == ["incident", "group"]
    assert {r.status for r in rows} == {OutboxStatus.sent}
    if subject.current is not None:
        shown = subject.current(posted[1].message_id)
        assert shown is not None
        text, buttons = shown
        two, three = [p for p in text.split("\n\n") if "Related signals" in p]
        assert f"#{ids[1]}" in two.split("\n")[0] and two.endswith(f"\n{born}")
        assert f"#{ids[2]}" in three.split("\n")[0]  # under incident 3's line, no other's
        assert three.endswith("\nRelated signals (1): http status on http://shop/ (x4)")
        assert [data for row in buttons for _, data in row] == [f"d{ids[1]}" * 4, f"d{ids[2]}" * 4]


async def test_a_close_edit_lands_on_the_question_it_was_queued_for_not_a_newer_one(
    subject: Subject, db: Database
):
    """Issue 44: incident 1 is asked alone; it is resolved and reopened, and while incident 2's
    announcement waits out ``group_wait`` the sync closes the OLD question and incident 1 is
    asked again, grouped with 2. The close edit lands on the old question; the new group keeps
    incident 1's line and buttons."""
    name, chat = subject.channel.name, subject.chat

    def ask(incident_id: int, text: str) -> None:
        queue.enqueue(
            db, name, method="send", chat_id=chat, text=text,
            buttons=[[("Deny", f"d{incident_id}" * 4)]], incident_id=incident_id,
            role="incident",
        )  # fmt: skip

    ask(1, "incident 1 down")
    channel = _EditsSeen(subject.channel)
    stop = asyncio.Event()
    task = asyncio.create_task(OutboxWorker(channel, db, group_wait=3.0).run(stop))  # type: ignore[arg-type]
    try:
        await _until(lambda: not queue.pending(db, name), "the first question")
        with db.session() as s:
            old = s.exec(select(ChannelMessage).where(ChannelMessage.channel == name)).one()
        ask(2, "incident 2 down")  # within group_wait of the first: it waits for the window
        queue.close_question(  # the sync saw the old question over ("open": reopened)
            db, name, chat_id=chat, incident_id=1, text="incident 1\n\nHandled outside this chat.",
            only_message=old.id,
        )  # fmt: skip
        ask(1, "incident 1 down again")  # the reopened incident asked anew: grouped with 2
        await _until(lambda: not queue.pending(db, name), "the group and the edit")
    finally:
        stop.set()
        await task
    with db.session() as s:
        posted = s.exec(select(ChannelMessage).where(ChannelMessage.channel == name)).all()
    assert [m.role for m in posted] == ["incident", "group"]
    assert [m for m, text in channel.edits if "Handled outside" in text] == [old.message_id]
    if subject.current is not None:
        shown_old = subject.current(old.message_id)
        shown_group = subject.current(posted[1].message_id)
        assert shown_old is not None and shown_group is not None
        assert "Handled outside" in shown_old[0] and shown_old[1] == []  # the old one closed
        text, buttons = shown_group
        assert "#1" in text and "Handled outside" not in text  # the new one still asks
        assert [data for row in buttons for _, data in row] == ["d2" * 4, "d1" * 4]


class _EditsSeen:
    """A channel that remembers which message each edit went to."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel
        self.edits: list[tuple[str, str]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._channel, name)

    async def edit(self, chat: str, message_id: str, text: str, buttons: Any) -> None:
        self.edits.append((message_id, text))
        await self._channel.edit(chat, message_id, text, buttons)
