"""Routing and paging on a real ``guard run``: the local Bot API server, the local PagerDuty
Events API v2 server and a webhook receiver that checks Guard's signature.

A critical HTTP incident is routed by ``routes:`` (severity critical: a chat and PagerDuty,
``continue: true``; the playbook: a second chat and a webhook): its question goes to both routed
chats and not to the default chat, and PagerDuty and the webhook are triggered. A stranger's
press in a routed chat is refused as anywhere; the admin's press there runs the remedy, and the
resolution reaches PagerDuty with the trigger's ``dedup_key`` and the webhook as a resolve.
"""

from __future__ import annotations

from tests.fakes.pagerduty import ROUTING_KEY
from tests.fakes.webhook_receiver import SECRET
from tests.helpers.agent import find, wait_for
from tests.helpers.telegram import (
    ADMIN,
    CHAT,
    STRANGER,
    answers,
    buttons,
    configure,
    guard_run,
    http_playbook,
    write_http_skill,
)

ONCALL, TEAM = -1001, -1002


def asked_in(tg, chat: int, incident_id: int) -> dict:
    def found() -> dict | None:
        for m in tg.bot_messages(f"Incident #{incident_id}"):
            if m["chat"]["id"] == chat and "reply_markup" in m and "reply_to_message" not in m:
                return m
        return None

    return wait_for(found, 60, f"the question in chat {chat}")


def test_a_critical_incident_goes_to_its_routed_chats_pagerduty_and_the_webhook(
    home, tg, service, pd, hook
):
    http_playbook(home, service, auto_resolve=False)
    write_http_skill(home, service)
    configure(
        home,
        tg,
        notifiers={
            "pagerduty": {"primary": {"routing_key": ROUTING_KEY, "url": pd.url}},
            "webhook": {"ops": {"url": hook.url, "hmac_secret": SECRET}},
        },
        routes=[
            {
                "match": {"severity": "critical"},
                "telegram_chat": ONCALL,
                "notify": ["pagerduty:primary"],
                "continue": True,
            },
            {"match": {"playbook": "web"}, "telegram_chat": TEAM, "notify": ["webhook:ops"]},
            {"match": {"severity": "warning"}, "telegram_chat": -1009},
        ],
    )
    with guard_run(home) as log:
        inc = wait_for(lambda: find(home, state="awaiting_human"), 60, "Guard to ask")
        key = f"guard-incident-{inc['id']}"
        oncall, team = asked_in(tg, ONCALL, inc["id"]), asked_in(tg, TEAM, inc["id"])
        assert buttons(oncall) and buttons(team)
        pd.wait_for(lambda s: len(s.events) >= 1)
        (trigger,) = pd.events
        assert trigger["event_action"] == "trigger" and trigger["dedup_key"] == key
        assert trigger["payload"]["severity"] == "critical"
        (body,) = hook.wait_for(1)
        assert body["action"] == "trigger" and body["incident"]["id"] == inc["id"]

        # authorisation is the sender's, whatever the chat: a stranger in a routed chat is refused
        run = next(d for label, d in buttons(team) if "web-fix" in label)
        tg.press(STRANGER, run, chat_id=TEAM, message_id=team["message_id"])
        wait_for(lambda: answers(tg), 30, "the refusal")
        assert answers(tg)[0].startswith("Refused") and service.fixes == 0
        # the admin's press in the other routed chat runs the remedy
        tg.press(ADMIN, run, chat_id=TEAM, message_id=team["message_id"])
        wait_for(lambda: find(home, id=inc["id"], state="resolved"), 60, "the incident resolved")
        assert service.fixes == 1

        pd.wait_for(lambda s: len(s.events) >= 2)
        assert pd.actions(key) == ["trigger", "resolve"]  # the same dedup_key
        assert [(a["dedup_key"], a["state"]) for a in pd.alerts] == [(key, "resolved")]
        bodies = hook.wait_for(2)
        assert [b["action"] for b in bodies] == ["trigger", "resolve"]
        # the press closed the question where it was pressed; the other chat's closes too
        wait_for(
            lambda: all(
                "reply_markup" not in m
                for m in tg.bot_messages(f"Incident #{inc['id']}")
                if m["chat"]["id"] in (ONCALL, TEAM)
            ),
            60,
            "both questions closed",
        )
        text = log.read_text()
    chats = {m["chat"]["id"] for m in tg.bot_messages(f"Incident #{inc['id']}")}
    assert chats == {ONCALL, TEAM}  # not the default chat, nor the warning route's
    assert CHAT not in chats
    assert ROUTING_KEY not in text and SECRET not in text  # secrets never logged
    assert "page" in text and "delivered to pagerduty:primary" in text


def test_a_fix_prompt_and_reply_in_a_routed_chat_are_taken_there(home, tg, service):
    """No skill: the "send a fix" button pressed in a routed chat prompts in that chat, the
    reply there runs and is learned, and the thread there says so."""
    http_playbook(home, service)
    (home.root / "skills").mkdir()
    configure(home, tg, routes=[{"match": {"playbook": "web"}, "telegram_chat": TEAM}])
    with guard_run(home):
        inc = wait_for(lambda: find(home, state="awaiting_human"), 60, "Guard to ask")
        msg = asked_in(tg, TEAM, inc["id"])
        send_fix = next(d for label, d in buttons(msg) if "Send a fix" in label)
        tg.press(ADMIN, send_fix, chat_id=TEAM, message_id=msg["message_id"])
        prompt = wait_for(
            lambda: next(iter(tg.bot_messages("Reply to this message")), None), 30, "the prompt"
        )
        assert prompt["chat"]["id"] == TEAM
        assert prompt["reply_to_message"]["message_id"] == msg["message_id"]
        tg.say(
            ADMIN, f"http.request {service.base}/fix", chat_id=TEAM, reply_to=prompt["message_id"]
        )
        wait_for(lambda: find(home, id=inc["id"], state="resolved"), 60, "the fix to cure")
        said = wait_for(
            lambda: [m for m in tg.bot_messages("saved as skill") if "reply_to_message" in m],
            30,
            "the thread told",
        )
        assert said[0]["chat"]["id"] == TEAM
        assert said[0]["reply_to_message"]["message_id"] == msg["message_id"]
    assert {m["chat"]["id"] for m in tg.bot_messages()} == {TEAM}  # nothing in the default chat
