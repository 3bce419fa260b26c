"""One incident routed to Telegram and Slack at once (a real ``guard run``, the local Bot API
server and the local Slack): the question appears in both chats the route names; an approver
presses the button on Slack (a Socket Mode ``interactive`` envelope, as Slack sends it); the fix
runs once; the Telegram question is edited to say it is over, its buttons gone, and a later
press on Telegram is refused as stale. What is asserted is what the servers recorded."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import GuardHome
from tests.fakes.slack import CHANNEL, SlackServer
from tests.fakes.telegram import TelegramServer
from tests.helpers.agent import show, wait_for
from tests.helpers.slack import buttons as slack_buttons
from tests.helpers.slack import slack_settings
from tests.helpers.telegram import (
    ADMIN,
    Service,
    answers,
    buttons,
    configure,
    guard_run,
    http_playbook,
    write_http_skill,
)

APPROVER = "U0APPROVER"
TG_CHAT, SLACK_ROOM = -1002, "C0SHOP"  # the route's chats, not the channels' defaults


@pytest.fixture
def slack() -> Iterator[SlackServer]:
    """The local Slack with the route's channel as well as the default one."""
    server = SlackServer(channels=(CHANNEL, SLACK_ROOM)).start()
    try:
        yield server
    finally:
        server.stop()


def questions_in_tg(tg: TelegramServer, chat: int) -> list[dict[str, Any]]:
    return [m for m in tg.bot_messages("Incident #") if m["chat"]["id"] == chat]


@pytest.mark.timeout(240)
def test_answered_on_slack_the_telegram_question_closes_and_a_late_press_there_is_stale(
    home: GuardHome, tg: TelegramServer, slack: SlackServer, service: Service
) -> None:
    configure(
        home,
        tg,
        slack=slack_settings(slack),
        access={"slack": {APPROVER: "approver"}},
        routes=[
            {"match": {"playbook": "web"}, "chats": {"telegram": TG_CHAT, "slack": SLACK_ROOM}}
        ],
    )
    http_playbook(home, service)
    write_http_skill(home, service)  # trust: approval, so Guard asks first
    with guard_run(home):
        wait_for(slack.connected, 30, "Guard's Socket Mode connection")
        on_slack = wait_for(
            lambda: next((m for m in slack.bot_messages("Incident #") if slack_buttons(m)), None),
            60,
            "the question on Slack",
        )
        on_tg = wait_for(
            lambda: next((m for m in questions_in_tg(tg, TG_CHAT) if buttons(m)), None),
            30,
            "the question on Telegram",
        )
        assert on_slack["channel"] == SLACK_ROOM  # the route's chats, in each channel
        incident_id = int(on_slack["text"].split("Incident #")[1].split()[0].strip("*:"))
        assert f"Incident #{incident_id}" in on_tg["text"]
        run_slack = next(v for label, v in slack_buttons(on_slack).items() if "web-fix" in label)
        run_tg = next(d for label, d in buttons(on_tg) if "web-fix" in label)
        assert run_slack == run_tg  # one approval, shown in both channels

        pressed = slack.push(
            "interactive", slack.press(APPROVER, run_slack, ts=on_slack["ts"], channel=SLACK_ROOM)
        )
        wait_for(lambda: pressed in slack.acked, 15, "the Slack press acked")
        wait_for(lambda: show(home, incident_id)["state"] == "resolved", 60, "the fix to heal")
        closed = wait_for(
            lambda: next(
                (
                    m
                    for m in questions_in_tg(tg, TG_CHAT)
                    if m["message_id"] == on_tg["message_id"] and not buttons(m)
                ),
                None,
            ),
            30,
            "the Telegram question closed",
        )
        tg.press(ADMIN, run_tg, chat_id=TG_CHAT, message_id=on_tg["message_id"])
        refused = wait_for(
            lambda: [a for a in answers(tg) if a.startswith("Refused")], 30, "the stale press"
        )
    assert service.fixes == 1  # the fix ran once
    assert "Resolved" in closed["text"] and closed.get("edit_date")
    assert refused == [f"Refused: already answered by slack:{APPROVER}"]  # stale, audited
    assert not slack_buttons(slack.messages[(SLACK_ROOM, on_slack["ts"])])  # closed there too
    # one question per channel, each in its routed chat only
    assert [m["ts"] for m in slack.bot_messages("Incident #") if "thread_ts" not in m] == [
        on_slack["ts"]
    ]
    assert not questions_in_tg(tg, 1001)
