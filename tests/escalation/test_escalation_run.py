"""Escalation on a real ``guard run`` against the local Bot API server and the local PagerDuty
Events API v2 server.

A critical HTTP incident is routed to Telegram and to ``pagerduty:primary``; its question has an
Acknowledge button. Nobody answers within the first step's time: ``pagerduty:secondary`` is
triggered, and reminders are posted in the question's thread. Unanswered, the next step fires
too; acknowledged (the button), the escalation stops: ``acknowledge`` reaches every pager that
was triggered and the later step never fires. ``guard ack`` acknowledges from the CLI.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.pagerduty import ROUTING_KEY, PagerDutyServer
from tests.fakes.pagerduty import running as pagerduty
from tests.helpers.agent import find, show, wait_for
from tests.helpers.telegram import (
    ADMIN,
    CHAT,
    answers,
    buttons,
    configure,
    guard_run,
    http_playbook,
)

PRIMARY, SECONDARY, TERTIARY = ROUTING_KEY, ROUTING_KEY[::-1], ROUTING_KEY.upper()
ONCALL, TEAM = -1001, -1002


@pytest.fixture
def pd() -> Iterator[PagerDutyServer]:
    with pagerduty() as server:
        yield server


def setup(
    home: Any, tg: Any, service: Any, pd: PagerDutyServer, second_after: str, **route: Any
) -> None:
    http_playbook(home, service)
    configure(
        home,
        tg,
        notifiers={
            "pagerduty": {
                name: {"routing_key": key, "url": pd.url}
                for name, key in (
                    ("primary", PRIMARY),
                    ("secondary", SECONDARY),
                    ("tertiary", TERTIARY),
                )
            }
        },
        routes=[{"match": {"severity": "critical"}, "notify": ["pagerduty:primary"], **route}],
        escalation={
            "remind_every": "3s",
            "check_every": "500ms",
            "steps": [
                {"after": "2s", "notify": ["pagerduty:secondary"]},
                {"after": second_after, "notify": ["pagerduty:tertiary"]},
            ],
        },
    )


def question(tg: Any, incident_id: int, chat: int = CHAT) -> dict[str, Any]:
    def found() -> dict[str, Any] | None:
        for m in tg.bot_messages(f"Incident #{incident_id}"):
            if m["chat"]["id"] == chat and "reply_markup" in m and "reply_to_message" not in m:
                return m
        return None

    return wait_for(found, 60, f"the question in chat {chat}")


def triggered(pd: PagerDutyServer, key: str) -> list[str]:
    return [
        e["routing_key"]
        for e in pd.events
        if e["event_action"] == "trigger" and e["dedup_key"] == key
    ]


def reminders(tg: Any, msg: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        m
        for m in tg.bot_messages("Reminder: incident")
        if m["chat"]["id"] == msg["chat"]["id"]
        and m.get("reply_to_message", {}).get("message_id") == msg["message_id"]
    ]


def test_unanswered_the_steps_fire_in_turn_once_each(home, tg, service, pd):
    """Asked in two routed chats: the reminders go to both threads."""
    setup(home, tg, service, pd, second_after="5s", telegram_chat=[ONCALL, TEAM])
    with guard_run(home):
        inc = wait_for(lambda: find(home, state="awaiting_human"), 60, "Guard to ask")
        key = f"guard-incident-{inc['id']}"
        msgs = [question(tg, inc["id"], chat) for chat in (ONCALL, TEAM)]
        assert all(buttons(m)[-1][0] == "✋ Acknowledge" for m in msgs)
        pd.wait_for(lambda s: TERTIARY in triggered(s, key))
        wait_for(
            lambda: all(len(reminders(tg, m)) >= 2 for m in msgs),
            60,
            "two reminders in each thread",
        )
        settled = time.monotonic()  # a few more ticks: nothing fires twice
        wait_for(lambda: time.monotonic() - settled > 2, 30, "two seconds")
        assert triggered(pd, key) == [PRIMARY, SECONDARY, TERTIARY]  # the route's, then the steps
        for msg in msgs:
            texts = [m["text"] for m in reminders(tg, msg)]
            assert len(texts) == len(set(texts))  # each reminder once (each says its wait)
        reminded = {m["chat"]["id"] for m in tg.bot_messages("Reminder")}
        assert reminded == {ONCALL, TEAM}  # not the default chat: it was not asked there
    timeline = [e["type"] for e in show(home, inc["id"])["timeline"]]
    assert timeline.count("escalation_step") == 2


def test_an_acknowledgement_stops_the_escalation(home, tg, service, pd):
    setup(home, tg, service, pd, second_after="30s")
    with guard_run(home):
        inc = wait_for(lambda: find(home, state="awaiting_human"), 60, "Guard to ask")
        key = f"guard-incident-{inc['id']}"
        msg = question(tg, inc["id"])
        pd.wait_for(lambda s: SECONDARY in triggered(s, key))  # no answer within 2s: step 1
        ack = dict(buttons(msg))["✋ Acknowledge"]
        tg.press(ADMIN, ack, chat_id=CHAT, message_id=msg["message_id"])
        wait_for(lambda: answers(tg), 30, "the press answered")
        assert answers(tg)[0] == f"Acknowledged by telegram:{ADMIN}: escalation and reminders stop."
        pd.wait_for(
            lambda s: (
                sorted(e["routing_key"] for e in s.events if e["event_action"] == "acknowledge")
                == sorted([PRIMARY, SECONDARY])
            )
        )
        assert [a["state"] for a in pd.alerts] == ["acknowledged", "acknowledged"]
        told = wait_for(lambda: tg.bot_messages("Acknowledged by"), 30, "the ack in the thread")
        assert told[0]["reply_to_message"]["message_id"] == msg["message_id"]
        seen = len(reminders(tg, msg))
        # past the second step's time (30s after asking), with ticks every 500ms: nothing more
        acked = time.monotonic()
        wait_for(lambda: time.monotonic() - acked > 32, 60, "the second step's time to pass")
        assert TERTIARY not in triggered(pd, key)
        assert len(reminders(tg, msg)) == seen
        assert show(home, inc["id"])["state"] == "awaiting_human"  # still open for an answer
        assert "reply_markup" in question(tg, inc["id"])


def test_guard_ack_from_the_cli(home, tg, service, pd):
    setup(home, tg, service, pd, second_after="1h")
    with guard_run(home):
        inc = wait_for(lambda: find(home, state="awaiting_human"), 60, "Guard to ask")
        key = f"guard-incident-{inc['id']}"
        pd.wait_for(lambda s: SECONDARY in triggered(s, key))
        done = home.cli("ack", str(inc["id"]))
        assert f"incident #{inc['id']} acknowledged by cli:" in done.stdout
        pd.wait_for(lambda s: len([e for e in s.events if e["event_action"] == "acknowledge"]) == 2)
        again = home.cli("ack", str(inc["id"]))
        assert "was already acknowledged by cli:" in again.stdout
    missing = home.cli("ack", "999", check=False)
    assert missing.returncode == 1 and "no incident 999" in missing.stderr
    audit = home.cli("audit", "verify")
    assert audit.returncode == 0
