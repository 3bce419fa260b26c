"""The conversation port's ``Inbound`` half, run against every channel's inbound adapter (as
``test_channel_contract`` runs the sending half): Telegram (updates as the Bot API sends them,
through the python-telegram-bot handlers, presses answered on the local Bot API server) and the
console (lines an operator types), and Slack (Socket Mode's envelopes as the local Slack
builds them, through the Slack runner's dispatch, presses answered with ``chat.postEphemeral`` on
the local Web API). The same answers policy (``guard.notify.answers``) acts on
all, with a real store and the real gate: a press, a reply that is a fix, a group reply,
acknowledge, a slash command, a stranger, a forged or replayed press, and a press on a
proposal that changed. A new channel joins ``SUBJECTS`` and passes the same tests."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from loguru import logger
from sqlmodel import col, select
from telegram import Bot, Update
from telegram.ext import ApplicationHandlerStop

from guard.config import Settings
from guard.domain.records import utcnow
from guard.notify.answers.presses import Answers
from guard.notify.answers.senders import Authoriser
from guard.notify.channel import Markup
from guard.notify.console import inbound as console_inbound
from guard.notify.fanout import ChannelNotifier
from guard.notify.inbound import Inbound
from guard.notify.plain import PlainMarkup
from guard.notify.running_gate import allowlist_gate
from guard.notify.slack.channel import client
from guard.notify.slack.gateway import dispatch
from guard.notify.slack.markup import SlackMarkup
from guard.notify.slack.updates import Delivery
from guard.notify.slack.updates import event as slack_event
from guard.notify.telegram.handlers import Handlers
from guard.notify.telegram.markup import HtmlMarkup
from guard.store.db import Database, open_database
from guard.store.models import (
    Approval,
    AuditEntry,
    ChannelMessage,
    HumanCommand,
    IncidentState,
    MessageGroupMember,
    OutboxMessage,
)
from guard.store.state import put_state
from guard.util.commandtext import approval_key
from tests.fakes.slack import BOT_TOKEN, CHANNEL, SlackServer
from tests.fakes.telegram import TelegramServer
from tests.helpers.agent import stored_incident
from tests.helpers.telegram import TOKEN
from tests.matrix.subject import OPS, ROOM, STRANGER, matrix_subject

pytestmark = pytest.mark.unit

SUBJECTS = ["telegram", "console", "slack", "matrix"]
ASKED, GROUP = 77, 88  # the incident's message, a grouped message of two incidents


@dataclass
class Subject:
    name: str
    db: Database
    chat: str
    admin: int | str
    stranger: int | str
    deliver: Callable[[str, int | str, str, int | None, int | None], Any]
    """``deliver(kind, user, text_or_data, message_id, update_id)``: returns the update id."""
    answered: Callable[[], list[str]]
    """The immediate answers to presses so far."""
    incidents: list[int] = field(default_factory=list)

    async def press(self, user: int | str, data: str, on: int = ASKED, again: int | None = None):
        return await self.deliver("press", user, data, on, again)

    async def reply(self, user: int | str, text: str, to: int = ASKED) -> int:
        return int(await self.deliver("text", user, text, to, None))

    async def command(self, user: int | str, text: str) -> int:
        return int(await self.deliver("command", user, text, None, None))

    def button(self, approval_id: str, kind: str, incident: int | None = None, **extra: Any):
        with self.db.session() as s:
            s.add(
                Approval(
                    id=approval_id,
                    incident_id=incident or self.incidents[0],
                    kind=kind,
                    expires_at=utcnow() + timedelta(hours=1),
                    **extra,
                )
            )
            msg = s.exec(
                select(ChannelMessage).where(ChannelMessage.message_id == str(ASKED))
            ).one()
            msg.approvals = [*msg.approvals, approval_id]
            s.add(msg)

    def rows(self, table: Any, *where: Any) -> list[Any]:
        with self.db.session() as s:
            return list(s.exec(select(table).where(*where)).all())

    def said(self, contains: str) -> list[str]:
        texts = self.rows(OutboxMessage, col(OutboxMessage.text).contains(contains))
        return [r.text for r in texts if r.channel == self.name]


def world(tmp_path: Path, name: str, chat: str, admin: int | str, markup: Markup) -> Any:
    """A store with an incident asked in ``chat`` (message ``ASKED``) and a grouped message
    of two more; the runner's parts the answers read; ``admin`` allowed at the gate."""
    settings = Settings(
        data_dir=tmp_path, skills_dir=tmp_path / "skills", playbooks_dir=tmp_path / "playbooks"
    )
    db = open_database(settings.database_url)
    with db.session() as s:
        ids = [
            stored_incident(s, IncidentState.awaiting_human, fingerprint=f"fp{i}").id
            for i in range(3)
        ]
        common: dict[str, Any] = {"channel": name, "chat_id": chat, "live": True}
        s.add(ChannelMessage(message_id=str(ASKED), incident_id=ids[0], role="incident", **common))
        s.add(ChannelMessage(message_id=str(GROUP), role="group", **common))
        for i in ids[1:]:
            s.add(MessageGroupMember(message_id=str(GROUP), incident_id=i, text=f"#{i}", **common))

    async def send_report(chat_id: str | None = None, also: Any = None) -> None:
        pass

    gate = allowlist_gate({name: SimpleNamespace(allowed_user_ids=[admin])})
    gateway = SimpleNamespace(
        db=db,
        auth=Authoriser(name, db, gate),
        settings=settings,
        chat_id=chat,
        runtime=None,
        notifier=ChannelNotifier(db, name, chat, markup),
        send_report=send_report,
    )
    return gateway, ids


@pytest.fixture(params=SUBJECTS)
async def subject(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Subject]:
    counter = iter(range(5000, 10**6))
    if request.param == "telegram":
        server = TelegramServer(TOKEN).start()
        bot = Bot(TOKEN, base_url=server.url + "/bot")
        await bot.initialize()
        chat = 1001
        gateway, ids = world(tmp_path, "telegram", str(chat), 42, HtmlMarkup())
        handlers = Handlers(gateway)

        async def deliver(kind: str, user: Any, text: str, on: Any, again: Any) -> int:
            update_id = again or next(counter)
            who = {"id": user, "is_bot": False, "first_name": "u"}
            where = {"date": int(time.time()), "chat": {"id": chat, "type": "group"}}
            if kind == "press":
                q = {"id": f"cq{update_id}", "chat_instance": "ci", "data": text, "from": who}
                payload: dict[str, Any] = {
                    "callback_query": {**q, "message": {"message_id": on, **where, "text": "?"}}
                }
            else:
                msg: dict[str, Any] = {"message_id": next(counter), "from": who, "text": text}
                if kind == "command":
                    msg["entities"] = [
                        {"type": "bot_command", "offset": 0, "length": len(text.split()[0])}
                    ]
                if on is not None:
                    msg["reply_to_message"] = {"message_id": on, **where, "text": "?"}
                payload = {"message": {**msg, **where}}
            update = Update.de_json({"update_id": update_id, **payload}, bot)
            ctx: Any = SimpleNamespace(args=text.split()[1:])
            try:
                await handlers.remember(update, ctx)
            except ApplicationHandlerStop:
                return update_id
            handler = {"press": handlers.on_callback, "command": handlers.on_command}
            await handler.get(kind, handlers.on_text)(update, ctx)
            return update_id

        def answered() -> list[str]:
            return [str(c["params"].get("text", "")) for c in server.sent("answerCallbackQuery")]

        try:
            yield Subject("telegram", gateway.db, str(chat), 42, 666, deliver, answered, ids)
        finally:
            await bot.shutdown()
            server.stop()
    elif request.param == "slack":
        slack = SlackServer().start()
        web = client(BOT_TOKEN, slack.url)
        gateway, ids = world(tmp_path, "slack", CHANNEL, "U0ADMIN", SlackMarkup())
        answers = Answers(gateway, "slack", SlackMarkup())
        delivered: dict[int, Delivery] = {}

        async def deliver(kind: str, user: Any, text: str, on: Any, again: Any) -> int:
            if again is not None:  # Slack delivers the same payload again
                await dispatch(answers, delivered[again])
                return int(again)
            if kind == "press":
                found = Delivery("interactive", slack.press(user, text, ts=str(on)), web)
            elif kind == "command":
                name, _, rest = text.partition(" ")
                found = Delivery(
                    "slash_commands", slack.slash(user, "/guard", f"{name[1:]} {rest}")
                )
            else:
                thread = str(on) if on is not None else None
                found = Delivery("events_api", slack.say(user, text, thread_ts=thread), web)
            event = slack_event(found)
            assert event is not None and event.kind == kind
            delivered[event.update_id] = found
            await dispatch(answers, found)
            return event.update_id

        def ephemeral() -> list[str]:
            return [str(c["params"].get("text", "")) for c in slack.sent("chat.postEphemeral")]

        try:
            yield Subject(
                "slack", gateway.db, CHANNEL, "U0ADMIN", "U0STRANGER", deliver, ephemeral, ids
            )
        finally:
            slack.stop()
    elif request.param == "matrix":
        async with matrix_subject(tmp_path, world, counter) as (deliver, answered, db, ids):
            yield Subject("matrix", db, ROOM, OPS, STRANGER, deliver, answered, ids)
    else:
        lines: list[str] = []
        sink = logger.add(lines.append, format="{message}", level="WARNING")
        gateway, ids = world(tmp_path, "console", "console", "alice", PlainMarkup())
        answers = Answers(gateway, "console", PlainMarkup())

        async def deliver(kind: str, user: Any, text: str, on: Any, again: Any) -> int:
            update_id = again or next(counter)
            line = {"press": f"press {on} {text}", "text": f"reply {on} {text}"}.get(kind, text)
            event: Inbound = console_inbound.event(line, user, update_id)
            assert event.kind == kind
            if await answers.remember(event):
                act = {"press": answers.press, "command": answers.command}
                await act.get(kind, answers.text)(event)
            return update_id

        try:
            yield Subject(
                "console",
                gateway.db,
                "console",
                "alice",
                "mallory",
                deliver,
                lambda: [line.strip().removeprefix("⚠ ") for line in lines],
                ids,
            )
        finally:
            logger.remove(sink)


async def test_a_press_spends_its_approval_and_queues_the_command(subject: Subject) -> None:
    subject.button("deny-1", "deny")
    await subject.press(subject.admin, "deny-1")
    [cmd] = subject.rows(HumanCommand)
    assert (cmd.verb, cmd.incident_id) == ("deny", subject.incidents[0])
    assert cmd.actor == f"{subject.name}:{subject.admin}"
    assert any(
        a.startswith(f"Denied by {subject.name}:{subject.admin}") for a in subject.answered()
    )
    assert subject.said("no remedy will run")  # the question's closing edit, queued


async def test_a_reply_that_is_a_fix_queues_it_and_an_ambiguous_one_is_asked_about(
    subject: Subject,
) -> None:
    await subject.reply(subject.admin, "docker.restart api")
    [cmd] = subject.rows(HumanCommand)
    assert (cmd.verb, cmd.fix) == ("reply", "docker.restart api")
    assert subject.said(f"Running your fix for incident #{subject.incidents[0]}")
    await subject.reply(subject.admin, "ok, looking at it now")
    assert len(subject.rows(HumanCommand)) == 1  # talk is not run
    [confirm] = subject.rows(OutboxMessage, OutboxMessage.role == "confirm")
    assert "as a fix for incident" in confirm.text and len(confirm.buttons[0]) == 2
    run = confirm.buttons[0][0][1]
    with subject.db.session() as s:  # the question is a message of the channel's, like any
        s.add(
            ChannelMessage(
                channel=subject.name,
                chat_id=subject.chat,
                message_id="99",
                live=True,
                approvals=[data for _, data in confirm.buttons[0]],
            )
        )
    await subject.press(subject.admin, run, on=99)
    assert [c.fix for c in subject.rows(HumanCommand)] == [
        "docker.restart api",
        "ok, looking at it now",
    ]


async def test_a_group_reply_names_its_incident(subject: Subject) -> None:
    second = subject.incidents[1]
    await subject.reply(subject.admin, "docker.restart api", to=GROUP)
    assert not subject.rows(HumanCommand) and subject.said("holds several incidents")
    await subject.reply(subject.admin, f"#{second} docker.restart api", to=GROUP)
    [cmd] = subject.rows(HumanCommand)
    assert (cmd.incident_id, cmd.fix) == (second, "docker.restart api")


async def test_acknowledge_stops_escalation_once(subject: Subject) -> None:
    subject.button("ack-1", "ack")
    await subject.press(subject.admin, "ack-1")
    assert any(a.startswith(f"Acknowledged by {subject.name}:") for a in subject.answered())
    await subject.command(subject.admin, f"/ack {subject.incidents[0]}")
    assert subject.said("was already acknowledged by")


async def test_slash_commands_answer_in_the_channel_markup(subject: Subject) -> None:
    await subject.command(subject.admin, "/incidents")
    [listing] = subject.said("open incident(s)")
    bold = {"telegram": "<b>3 open", "matrix": "<b>3 open", "slack": "*3 open"}
    assert listing.startswith(bold.get(subject.name, "3 open"))
    await subject.command(subject.admin, "/fix 1")
    assert subject.said("Usage: ")
    await subject.command(subject.admin, f"/fix {subject.incidents[2]} docker.restart db")
    [cmd] = subject.rows(HumanCommand)
    assert (cmd.incident_id, cmd.fix) == (subject.incidents[2], "docker.restart db")


async def test_a_stranger_is_refused_audited_once_and_nothing_runs(subject: Subject) -> None:
    subject.button("deny-1", "deny")
    await subject.press(subject.stranger, "deny-1")
    await subject.reply(subject.stranger, "docker.restart api")
    await subject.command(subject.stranger, "/incidents")
    assert not subject.rows(HumanCommand)
    assert any(a.startswith("Refused") for a in subject.answered())
    refused = subject.rows(AuditEntry, AuditEntry.action == f"{subject.name}.refused")
    assert len(refused) == 1  # once a window: a stranger's flood writes one row
    assert not subject.said("open incident(s)")


async def test_a_forged_or_replayed_press_is_refused(subject: Subject) -> None:
    await subject.press(subject.admin, "forged-approval-id")
    subject.button("deny-1", "deny")
    first = await subject.press(subject.admin, "deny-1")
    await subject.press(subject.admin, "deny-1", again=first)  # delivered again: skipped
    await subject.press(subject.admin, "deny-1")  # pressed again: already spent
    assert len(subject.rows(HumanCommand)) == 1
    refusals = [a for a in subject.answered() if a.startswith("Refused")]
    assert len(refusals) == 2, subject.answered()  # the forged one and the spent one


async def test_a_press_on_a_proposal_that_changed_runs_only_what_was_shown(
    subject: Subject,
) -> None:
    """The button is bound to the digest of the command its message showed: the command is
    queued with that digest (the agent runs only a command with it), and a button taken off
    the message (the proposal changed) is refused."""
    subject.button("run-1", "skill", skill="proposal")
    with subject.db.session() as s:
        put_state(s, approval_key("run-1"), {"digest": "d" * 64})
    await subject.press(subject.admin, "run-1")
    [cmd] = subject.rows(HumanCommand)
    assert (cmd.verb, cmd.fix) == ("approve", "d" * 64)
    assert any("the command shown" in a for a in subject.answered())
    subject.button("run-2", "skill", skill="proposal")
    with subject.db.session() as s:  # proposed again: the old button left the message
        msg = s.exec(select(ChannelMessage).where(ChannelMessage.message_id == str(ASKED))).one()
        msg.approvals = [a for a in msg.approvals if a != "run-2"]
        s.add(msg)
    await subject.press(subject.admin, "run-2")
    assert len(subject.rows(HumanCommand)) == 1
    assert subject.answered()[-1].startswith("Refused")
