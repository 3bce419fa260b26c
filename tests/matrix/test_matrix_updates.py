"""Matrix's inbound adapter: a reaction on the bot's message is a press of the button its key
names (another reaction is talk); a reply carrying a code is a press of that button; a reply
otherwise is text without its fallback quote; ``/...`` is a command; the bot's own events and
edits are nothing."""

from __future__ import annotations

import pytest

from guard.notify.matrix import buttons as kb
from guard.notify.matrix.updates import MatrixUpdate, event, update_number
from tests.matrix.subject import BOT, OPS, ROOM, room_event

pytestmark = pytest.mark.unit

SHOWN = kb.buttons([[("▶ Run docker-start-exited", "a1"), ("✖ Deny", "d1")]])


def test_a_reaction_presses_the_button_of_its_key_and_any_other_is_talk() -> None:
    ev = event(MatrixUpdate(ROOM, room_event("press", 1, OPS, "", "$q"), BOT, SHOWN))
    assert ev is not None
    assert (ev.kind, ev.data, ev.message_id, ev.user, ev.update_id) == (
        "press",
        "a1",
        "$q",
        OPS,
        update_number("$e1"),
    )
    other = room_event("press", 2, OPS, "", "$q")
    other["content"]["m.relates_to"]["key"] = "👍"
    assert event(MatrixUpdate(ROOM, other, BOT, SHOWN)) is None  # a 👍: talk, not a press
    on_other = room_event("press", 3, OPS, "", "$someone-elses")
    assert event(MatrixUpdate(ROOM, on_other, BOT, [])) is None  # no buttons there


def test_a_reply_with_a_code_presses_and_any_other_reply_is_text() -> None:
    pressed = event(MatrixUpdate(ROOM, room_event("text", 3, OPS, kb.code("d1"), "$q"), BOT, SHOWN))
    assert pressed is not None and (pressed.kind, pressed.data) == ("press", "d1")
    fix = event(
        MatrixUpdate(ROOM, room_event("text", 4, OPS, "docker.restart api", "$q"), BOT, SHOWN)
    )
    assert fix is not None
    assert (fix.kind, fix.text, fix.reply_to) == ("text", "docker.restart api", "$q")
    cmd = event(
        MatrixUpdate(ROOM, room_event("text", 5, OPS, "/fix 3 docker.restart api", None), BOT)
    )
    assert cmd is not None and (cmd.kind, cmd.command, cmd.args) == (
        "command",
        "fix",
        ["3", "docker.restart", "api"],
    )


def test_the_bots_own_events_and_edits_are_nothing() -> None:
    assert event(MatrixUpdate(ROOM, room_event("text", 6, BOT, "hello", None), BOT)) is None
    edit = room_event("text", 7, OPS, "x", None)
    edit["content"]["m.new_content"] = {"msgtype": "m.text", "body": "y"}
    assert event(MatrixUpdate(ROOM, edit, BOT)) is None
