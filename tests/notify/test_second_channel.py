"""A second channel added in the test suite only (``tests/notify/recording.py``) gets the
outbox's guarantees with no change to ``guard/``: grouped announcements, edits, at most one
message per event across a kill -9, an approval through it, and a fan-out in which Telegram
failing neither blocks nor repeats it."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from guard.domain.records import utcnow
from guard.notify import inbound
from guard.notify.base import HumanRequest, IncidentUpdate, SkillOption
from guard.notify.fanout import ChannelNotifier, FanOut
from guard.notify.outbox import queue
from guard.notify.outbox.worker import OutboxWorker
from guard.notify.plain import PlainMarkup
from guard.notify.runner import ChannelRunner
from guard.notify.sync import Sync
from guard.notify.telegram.channel import TelegramChannel
from guard.notify.telegram.markup import HtmlMarkup
from guard.store.db import Database, open_database
from guard.store.models import (
    Approval,
    AuditEntry,
    ChannelMessage,
    HumanCommand,
    Incident,
    IncidentState,
    OutboxMessage,
    OutboxStatus,
)
from tests.fakes.telegram import TelegramServer
from tests.helpers.agent import stored_incident
from tests.helpers.telegram import CHAT, TOKEN
from tests.notify.recording import RecordingChannel

NAME, ROOM = "recording", "ops-room"
DRIVER = """
import asyncio, sys
from pathlib import Path
from guard.notify.outbox.queue import pending
from guard.notify.outbox.worker import OutboxWorker
from guard.store.db import open_database
from tests.notify.recording import RecordingChannel

async def main() -> None:
    db = open_database(sys.argv[1])
    worker = OutboxWorker(RecordingChannel(Path(sys.argv[2])), db, group_wait=1.0)
    await worker.recover()
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    while pending(db, "recording"):
        await asyncio.sleep(0.1)
    stop.set()
    await task

asyncio.run(main())
"""


@pytest.fixture
def db(tmp_path: Path) -> Database:
    return open_database(f"sqlite:///{tmp_path / 'guard.db'}")


def incidents(db: Database, n: int) -> list[int]:
    """Incidents awaiting a human, each with its approval of ``web-fix`` (``request``)."""
    with db.session() as s:
        ids = [stored_incident(s, "awaiting_human").id for _ in range(n)]
        for i in ids:
            expires = utcnow() + timedelta(hours=1)
            s.add(Approval(id=f"a{i:021d}", incident_id=i, kind="skill", expires_at=expires))
    return ids


def request(incident_id: int) -> HumanRequest:
    option = SkillOption("web-fix", "restart the web", f"a{incident_id:021d}")
    return HumanRequest(incident_id, "down", "critical", "http://svc", 1, "", [option])


async def until_sent(db: Database, channel: str, within: float = 60) -> None:
    for _ in range(int(within * 10)):
        if not queue.pending(db, channel):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{channel}'s outbox did not empty")


async def deliver(db: Database, channel: RecordingChannel) -> None:
    """What ``guard run`` does for a channel (``ChannelRunner``), until its outbox is empty."""
    runner = ChannelRunner(
        channel, db, ChannelNotifier(db, NAME, ROOM, channel.markup), group_wait=1
    )
    stop = asyncio.Event()
    await runner.start(stop)
    try:
        await until_sent(db, NAME)
    finally:
        stop.set()
        await runner.wait()


async def test_announcements_are_grouped_and_edited_on_the_second_channel(
    db: Database, tmp_path: Path
) -> None:
    channel = RecordingChannel(tmp_path / "room.json")
    notifier = FanOut([ChannelNotifier(db, NAME, ROOM, PlainMarkup())])
    ids = incidents(db, 3)
    for i in ids:
        await notifier.ask(request(i))
    await deliver(db, channel)
    first, group = channel.messages().values()
    assert f"Incident #{ids[0]}" in first["text"]  # the first at once, the others together
    assert group["text"].startswith("2 incidents opened together")
    await notifier.update(IncidentUpdate(ids[0], "down", "resolved", "healed by web-fix"))
    await notifier.update(IncidentUpdate(ids[1], "down", "resolved", "healed by web-fix"))
    await deliver(db, channel)
    messages = channel.messages()
    one, two, three = messages  # the first, the group, the reply: ids such as Slack's
    assert messages[one]["edits"] == 1 and messages[one]["buttons"] == []  # its question is over
    assert "Resolved" in messages[one]["text"]
    assert messages[three]["reply_to"] == one and "healed by web-fix" in messages[three]["text"]
    assert messages[two]["edits"] == 1  # the group's line for the second incident says how
    assert f"#{ids[1]} (closed)" in messages[two]["text"]
    assert [d for row in messages[two]["buttons"] for _, d in row if d.startswith("a")] == [
        f"a{ids[2]:021d}"
    ]
    assert len(messages) == 3  # a grouped incident's outcome is its line, not a new post


async def test_a_question_answered_elsewhere_is_closed_on_the_second_channel(
    db: Database, tmp_path: Path
) -> None:
    channel = RecordingChannel(tmp_path / "room.json")
    notifier = ChannelNotifier(db, NAME, ROOM, PlainMarkup())
    [incident_id] = incidents(db, 1)
    await notifier.ask(request(incident_id))
    await deliver(db, channel)
    with db.session() as s:  # healed from the CLI, say: nobody told the channel
        incident = s.get(Incident, incident_id)
        assert incident is not None
        incident.state = IncidentState.resolved
        s.add(incident)
    Sync(db, NAME, ROOM, notifier.closed_text, channel.markup).once()
    await deliver(db, channel)
    [message] = channel.messages().values()
    assert message["edits"] == 1 and message["buttons"] == []
    assert "Handled outside this chat." in message["text"]


@pytest.mark.parametrize("crash_at", ["outbox.sent_before_id", "outbox.sent_before_id:2"])
def test_a_kill_9_after_the_post_posts_nothing_twice(
    db: Database, tmp_path: Path, crash_at: str
) -> None:
    """A real process posts through the recording channel and is SIGKILLed at the crash point
    (the post made, its id not stored); the restarted one finds the post instead of repeating
    it (the second case kills it after the grouped announcement)."""
    channel = RecordingChannel(tmp_path / "room.json")
    ids = incidents(db, 3)
    for i in ids:
        text, buttons = PlainMarkup().request(request(i))
        queue.enqueue(
            db, NAME, method="send", chat_id=ROOM, text=text, buttons=buttons,
            incident_id=i, role="incident",
        )  # fmt: skip
    queue.enqueue(db, NAME, method="send", chat_id=ROOM, text="and a plain note")
    args = [sys.executable, "-c", DRIVER, db.url, str(channel.path)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    crashed = subprocess.run(args, env={**env, "GUARD_CRASH_AT": crash_at}, timeout=120)
    assert crashed.returncode == -signal.SIGKILL
    with db.session() as s:
        in_flight = s.exec(select(OutboxMessage).where(OutboxMessage.status == "in_flight")).all()
    assert in_flight  # the post went out, Guard never learned its id
    subprocess.run(args, env=env, timeout=120, check=True)
    texts = Counter(m["text"] for m in channel.messages().values())
    assert set(texts.values()) == {1}, texts  # no text posted twice
    assert "and a plain note" in texts and sum("Incident #" in t for t in texts) >= 1
    with db.session() as s:
        rows = s.exec(select(OutboxMessage)).all()
        stored = s.exec(select(ChannelMessage.message_id)).all()
    assert {r.status for r in rows} == {OutboxStatus.sent}
    assert sorted(stored) == sorted(channel.messages())  # each post stored once, with its id


async def test_an_approval_through_the_second_channel(db: Database, tmp_path: Path) -> None:
    authz = pytest.importorskip(
        "guard.incidents.gate", reason="needs guard.incidents.gate (wt-authz)"
    )
    from guard.incidents import commands

    queue_command: Any = commands.queue_command  # the gate's signature (wt-authz)

    channel = RecordingChannel(tmp_path / "room.json")
    [incident_id] = incidents(db, 1)
    await ChannelNotifier(db, NAME, ROOM, PlainMarkup()).ask(request(incident_id))
    await deliver(db, channel)
    [(message_id, message)] = channel.messages().items()
    label, approval = message["buttons"][0][0]  # alice presses "Run web-fix"
    assert label == "Run web-fix"
    with db.session() as s:
        asked = s.exec(select(ChannelMessage).where(ChannelMessage.channel == NAME)).one()
    assert asked.message_id == message_id and approval in asked.approvals

    class RecordingRoom:  # the room's members may approve
        def decide(self, actor, verb, incident):
            return authz.Allowed() if actor.channel == NAME else None

    gate = authz.Gate([RecordingRoom()])
    press = inbound.Handled(NAME, 1, ROOM, message_id)
    queue_command(
        db, incident_id=incident_id, verb="approve", skill="web-fix",
        actor=authz.Actor(NAME, "alice"), gate=gate, also=press.mark,
    )  # fmt: skip
    assert inbound.seen(db, NAME, 1)  # the same press delivered again is skipped
    with pytest.raises(authz.NotAuthorised, match="no policy allows stranger:mallory"):
        queue_command(
            db, incident_id=incident_id, verb="approve", skill="web-fix",
            actor=authz.Actor("stranger", "mallory"), gate=gate,
        )  # fmt: skip
    with db.session() as s:
        [cmd] = s.exec(select(HumanCommand)).all()
        refused = s.exec(select(AuditEntry).where(AuditEntry.action == "human.refused")).all()
    assert (cmd.verb, cmd.actor, cmd.skill) == ("approve", "recording:alice", "web-fix")
    assert [e.actor for e in refused] == ["stranger:mallory"]  # audited once, at the gate


async def test_telegram_failing_neither_blocks_nor_repeats_the_second_channel(
    db: Database, tmp_path: Path, tg: TelegramServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from telegram import Bot

    monkeypatch.setenv("PTB_TIMEDELTA", "1")  # a 429's retry_after as PTB 23 gives it

    channel = RecordingChannel(tmp_path / "room.json")
    notifier = FanOut(
        [
            ChannelNotifier(db, "telegram", CHAT, HtmlMarkup()),
            ChannelNotifier(db, NAME, ROOM, PlainMarkup()),
        ]
    )
    bot = Bot(TOKEN, base_url=tg.url + "/bot")
    await bot.initialize()
    tg.fail_for(3.0, 429, retry_after=1)  # Telegram asks Guard to wait, again and again
    stop = asyncio.Event()
    telegram = asyncio.create_task(OutboxWorker(TelegramChannel(bot), db).run(stop))
    try:
        [incident_id] = incidents(db, 1)
        await notifier.ask(request(incident_id))
        await notifier.send_text("a daily note")
        await deliver(db, channel)  # the recording channel goes on meanwhile
        assert [m["text"] for m in channel.messages().values()][1] == "a daily note"
        assert queue.pending(db, "telegram")  # Telegram still refuses
        await until_sent(db, "telegram")
    finally:
        stop.set()
        await telegram
        await bot.shutdown()
    assert len(channel.messages()) == 2  # once each, on both channels
    assert len(tg.bot_messages()) == 2 and len(tg.bot_messages("a daily note")) == 1
