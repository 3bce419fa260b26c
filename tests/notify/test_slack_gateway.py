"""The Slack runner against the local Slack: presses arrive over a real Socket Mode websocket
(slack_sdk's client) and reach the one gate; a ``disconnect`` and reconnect neither loses nor
doubles a press; the HTTP endpoint believes only requests signed with the signing secret within
five minutes."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from sqlmodel import select

from guard.config import Settings
from guard.domain.records import utcnow
from guard.notify.channel import Post
from guard.notify.outbox import queue
from guard.notify.slack.channel import SlackChannel
from guard.notify.slack.gateway import SlackGateway
from guard.notify.slack.updates import Delivery, event
from guard.store.db import Database, open_database
from guard.store.models import Approval, ChannelMessage, HumanCommand, IncidentState
from tests.fakes.slack import (
    APP_TOKEN,
    BOT_TOKEN,
    CHANNEL,
    SIGNING_SECRET,
    SlackServer,
)
from tests.helpers.agent import free_port, stored_incident

pytestmark = pytest.mark.unit

APPROVER, VIEWER, ASKED = "U0APPROVER", "U0VIEWER", "1733472000.000077"


def settings_for(tmp_path: Path, server: SlackServer, **slack: Any) -> Settings:
    return Settings(
        data_dir=tmp_path,
        skills_dir=tmp_path / "skills",
        playbooks_dir=tmp_path / "playbooks",
        slack={
            "bot_token": BOT_TOKEN,
            "app_token": APP_TOKEN,
            "channel": CHANNEL,
            "api_base_url": server.url,
            **slack,
        },
        access={"slack": {APPROVER: "approver", VIEWER: "viewer"}},
    )


def asked(db: Database, message: str = ASKED) -> int:
    """An incident asked in the channel (in ``message``) with a deny button."""
    with db.session() as s:
        inc = stored_incident(s, IncidentState.awaiting_human, fingerprint="fp")
        s.add(
            Approval(
                id="deny-1",
                incident_id=inc.id,
                kind="deny",
                expires_at=utcnow() + timedelta(hours=1),
            )
        )
        s.add(
            ChannelMessage(
                channel="slack",
                chat_id=CHANNEL,
                message_id=message,
                incident_id=inc.id,
                role="incident",
                live=True,
                approvals=["deny-1"],
            )
        )
        return int(inc.id)


def commands(db: Database) -> list[HumanCommand]:
    with db.session() as s:
        return list(s.exec(select(HumanCommand)).all())


async def until(check: Callable[[], Any], within: float = 15, what: str = "") -> Any:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if found := check():
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def running(settings: Settings) -> tuple[SlackGateway, Database]:
    db = open_database(settings.database_url)
    gateway = SlackGateway(settings, db)
    await gateway.start()
    await asyncio.wait_for(gateway.ready.wait(), 15)
    return gateway, db


async def test_a_press_over_socket_mode_reaches_the_gate_and_is_acked(
    slack: SlackServer, tmp_path: Path
) -> None:
    gateway, db = await running(settings_for(tmp_path, slack))
    try:
        incident = asked(db)
        assert slack.hellos == 1
        assert [c["token"] for c in slack.sent("apps.connections.open")] == [APP_TOKEN]
        viewer = slack.push("interactive", slack.press(VIEWER, "deny-1", ts=ASKED))
        await until(lambda: viewer in slack.acked, what="the viewer's press acked")
        assert not commands(db)  # a viewer may not deny
        press = slack.push("interactive", slack.press(APPROVER, "deny-1", ts=ASKED))
        await until(lambda: press in slack.acked, what="the approver's press acked")
        [cmd] = commands(db)
        assert (cmd.verb, cmd.incident_id, cmd.actor) == ("deny", incident, f"slack:{APPROVER}")
        said = [c["params"] for c in slack.sent("chat.postEphemeral")]
        assert said[0]["user"] == VIEWER and said[0]["text"].startswith("Refused")
        assert said[1]["user"] == APPROVER and said[1]["text"].startswith("Denied by slack:")
    finally:
        await gateway.stop()


async def test_a_disconnect_and_reconnect_neither_loses_nor_doubles_a_press(
    slack: SlackServer, tmp_path: Path
) -> None:
    gateway, db = await running(settings_for(tmp_path, slack))
    try:
        asked(db)
        # the press goes out just before the socket closes: acked or not, it is handled once
        slack.disconnect(then_push=("interactive", slack.press(APPROVER, "deny-1", ts=ASKED)))
        await until(lambda: slack.hellos >= 2 and slack.connected(), what="the reconnect")
        await until(lambda: commands(db), what="the press handled")
        [envelope] = [e for e in slack.envelopes if e["type"] == "interactive"]
        await until(lambda: envelope["envelope_id"] in slack.acked, what="the press acked")
        slack.redeliver(envelope["envelope_id"])  # the ack was lost: Slack sends it again
        acks = slack.acked.count(envelope["envelope_id"])
        await until(lambda: slack.acked.count(envelope["envelope_id"]) > acks, what="re-ack")
        assert len(commands(db)) == 1
        assert len(slack.sent("apps.connections.open")) >= 2
    finally:
        await gateway.stop()


async def test_the_http_endpoint_believes_only_a_fresh_signature(
    slack: SlackServer, tmp_path: Path
) -> None:
    port = free_port()
    settings = settings_for(
        tmp_path, slack, mode="http", signing_secret=SIGNING_SECRET, app_token=None, port=port
    )
    gateway, db = await running(settings)
    url = f"http://127.0.0.1:{port}/slack/events"
    try:
        asked(db)
        press = slack.press(APPROVER, "deny-1", ts=ASKED)
        body = urlencode({"payload": json.dumps(press)}).encode()
        form = "application/x-www-form-urlencoded"
        deliver = asyncio.to_thread
        forged = await deliver(
            slack.http_deliver, url, body, secret="not-the-secret", content_type=form
        )
        stale = await deliver(
            slack.http_deliver, url, body, at=time.time() - 301, content_type=form
        )
        assert (forged, stale) == (401, 401) and not commands(db)
        assert await deliver(slack.http_deliver, url, body, content_type=form) == 200
        assert await deliver(slack.http_deliver, url, body, content_type=form) == 200  # again
        [cmd] = commands(db)
        assert cmd.actor == f"slack:{APPROVER}"
        challenge = json.dumps({"type": "url_verification", "challenge": "c-42"}).encode()
        assert await deliver(slack.http_deliver, url, challenge) == 200
        assert not slack.sent("apps.connections.open")  # no Socket Mode in http mode
    finally:
        await gateway.stop()


async def test_send_a_fix_asks_in_the_thread_and_a_reply_there_is_the_fix(
    slack: SlackServer, tmp_path: Path
) -> None:
    gateway, db = await running(settings_for(tmp_path, slack))
    try:
        question = await SlackChannel(gateway.web).post(Post(CHANNEL, "the question"))
        incident = asked(db, question)
        ts = question
        slack.push("interactive", slack.press(APPROVER, f"fix:{incident}", ts=ts))
        [prompt] = await until(
            lambda: [m for m in slack.bot_messages("Reply to this") if m.get("thread_ts") == ts],
            what="the prompt in the question's thread",
        )
        assert f"fixes incident #{incident}" in prompt["text"]
        slack.push("events_api", slack.say(APPROVER, "docker.restart api", thread_ts=ts))
        [cmd] = await until(lambda: commands(db), what="the fix queued")
        assert (cmd.verb, cmd.incident_id, cmd.fix) == ("reply", incident, "docker.restart api")
        assert (cmd.actor) == f"slack:{APPROVER}"
    finally:
        await gateway.stop()


def test_what_counts_as_a_person_s_message(slack: SlackServer) -> None:
    """A thread reply also sent to the channel is still a reply; an edit, a bot's message and
    Slack's escapes are not what the person typed."""
    said = slack.say(APPROVER, "echo a &gt; b &amp;&amp; ok", thread_ts=ASKED)
    said["event"]["subtype"] = "thread_broadcast"
    found = event(Delivery("events_api", said))
    assert found is not None and (found.kind, found.reply_to) == ("text", ASKED)
    assert found.text == "echo a > b && ok"
    for change in ({"subtype": "message_changed"}, {"bot_id": "B0OTHER"}):
        other = slack.say(APPROVER, "x")
        other["event"].update(change)
        assert event(Delivery("events_api", other)) is None
    typed = event(Delivery("slash_commands", slack.slash(APPROVER, "/guard", "ack 3")))
    assert typed is not None and (typed.kind, typed.text) == ("command", "/ack 3")
    bare = event(Delivery("slash_commands", slack.slash(APPROVER, "/guard", "")))
    assert bare is not None and bare.text == "/help"


async def test_without_its_websocket_the_outbox_still_posts_and_stop_ends_it(
    slack: SlackServer, tmp_path: Path
) -> None:
    slack.fail("apps.connections.open", "internal_error", times=1000)
    db = open_database(settings_for(tmp_path, slack).database_url)
    queue.enqueue(db, "slack", method="send", chat_id=CHANNEL, text="api down", role="text")
    gateway = SlackGateway(settings_for(tmp_path, slack), db)
    await gateway.start()
    try:
        await until(lambda: slack.bot_messages("api down"), what="the post")
        assert slack.sent("apps.connections.open") and not slack.connected()
    finally:
        await asyncio.wait_for(gateway.stop(), 10)
