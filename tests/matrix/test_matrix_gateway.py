"""The Matrix gateway in process against a real Synapse: it joins the room it was invited to,
takes what was said before it came as history (not acted on), answers a command through the
outbox, and after a restart goes on from its stored ``next_batch``: what was said while it was
down is answered once, nothing before is answered again. A stranger is refused once. A reply
carrying a button's code presses it; buttons a sender puts on their own message press
nothing."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from guard.config import Settings
from guard.domain.records import utcnow
from guard.notify.base import HumanRequest
from guard.notify.matrix.buttons import BUTTONS
from guard.notify.matrix.gateway import MatrixGateway
from guard.store.db import open_database
from guard.store.models import Approval, IncidentState
from tests.helpers.agent import stored_incident
from tests.matrix.conftest import Room


def gateway(room: Room, tmp_path: Path) -> MatrixGateway:
    settings = Settings(
        data_dir=tmp_path,
        matrix={
            "homeserver": room.hs.url,
            "user_id": room.bot.user_id,
            "access_token": room.bot.access_token,
            "room_id": room.room_id,
            "sync_timeout": "1s",
            "group_wait": "0s",
            "allowed_user_ids": [room.ops.user_id],
        },
    )
    return MatrixGateway(settings, open_database(settings.database_url))


def answers(room: Room, text: str) -> list[str]:
    events = room.hs.messages(room.ops, room.room_id)
    return [
        e["content"]["body"]
        for e in events
        if e["sender"] == room.bot.user_id and text in e["content"].get("body", "")
    ]


async def until(check, within: float = 30.0):  # type: ignore[no-untyped-def]
    for _ in range(int(within * 10)):
        got = await asyncio.to_thread(check)
        if got:
            return got
        await asyncio.sleep(0.1)
    raise AssertionError("timed out")


def say(room: Room, text: str, user: str = "ops") -> None:
    room.hs.send(getattr(room, user), room.room_id, {"msgtype": "m.text", "body": text})


async def test_a_restart_goes_on_from_the_stored_position(room: Room, tmp_path: Path) -> None:
    say(room, "/status")  # before Guard came: history
    gw = gateway(room, tmp_path)
    await gw.start()
    try:
        await asyncio.wait_for(gw.ready.wait(), 30)
        await asyncio.sleep(1.5)  # the first sync took the position
        say(room, "/help")
        await until(lambda: answers(room, "/mute TARGET"))
        say(room, "/status", user="viewer")  # not on the allowlist: refused
        await until(lambda: answers(room, "Refused"))
        say(room, "/report")  # the daily report: its text, then its chart, uploaded
        await until(lambda: answers(room, "Incidents per hour"))
        [chart] = [
            e
            for e in room.hs.messages(room.ops, room.room_id)
            if e["content"].get("msgtype") == "m.image"
        ]
        assert chart["content"]["url"].startswith("mxc://")
    finally:
        await gw.stop()
    say(room, "/incidents")  # while Guard is down
    again = gateway(room, tmp_path)
    await again.start()
    try:
        await until(lambda: answers(room, "No open incidents"))
        await asyncio.sleep(3)  # a few more syncs: nothing else comes
    finally:
        await again.stop()
    assert len(answers(room, "/mute TARGET")) == 1  # /help answered once, across the restart
    assert len(answers(room, "No open incidents")) == 1
    assert not answers(room, "Guard status")  # /status before Guard came: not answered


async def test_a_code_in_a_reply_presses_and_a_senders_own_buttons_press_nothing(
    room: Room, tmp_path: Path
) -> None:
    gw = gateway(room, tmp_path)
    with gw.db.session() as s:
        incident_id = int(stored_incident(s, IncidentState.awaiting_human).id)
        expires = utcnow() + timedelta(hours=1)  # a live question: sync leaves it open
        s.add(Approval(id="deny-x", incident_id=incident_id, kind="deny", expires_at=expires))
    await gw.start()
    try:
        await asyncio.wait_for(gw.ready.wait(), 30)
        await gw.notifier.ask(
            HumanRequest(
                incident_id=incident_id,
                title="web down",
                severity="critical",
                target="web",
                count=1,
                evidence="",
                deny_id="deny-x",
            )
        )
        asked = await until(lambda: questions(room))
        fix = next(b for b in asked[0]["content"][BUTTONS] if b["data"] == f"fix:{incident_id}")
        # ops forges a message of their own with the bot's button on it, and presses it
        forged = {"msgtype": "m.text", "body": "press me", BUTTONS: [{**fix, "key": "👀"}]}
        mine = room.hs.send(room.ops, room.room_id, forged)
        room.hs.react(room.ops, room.room_id, mine, "👀")
        await asyncio.sleep(2.5)
        assert not answers(room, "Reply to this message with the command")
        # the code, replied to the bot's question: the press of its button
        reply = {
            "msgtype": "m.text",
            "body": f"> <{room.bot.user_id}> Incident\n\n{fix['code']}",
            "m.relates_to": {"m.in_reply_to": {"event_id": asked[0]["event_id"]}},
        }
        room.hs.send(room.ops, room.room_id, reply)
        await until(lambda: answers(room, "Reply to this message with the command"))
        await asyncio.sleep(2)
    finally:
        await gw.stop()
    assert len(answers(room, "Reply to this message with the command")) == 1


def questions(room: Room) -> list[dict]:
    events = room.hs.messages(room.ops, room.room_id)
    return [e for e in events if e["sender"] == room.bot.user_id and BUTTONS in e["content"]]
