"""Buttons and replies on a real `guard run` against the Bot API test server.

The service is an HTTP endpoint the test controls: /healthz fails until something POSTs /fix.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from sqlmodel import select

from guard.domain.records import utcnow
from guard.store.models import Approval, AuditEntry, HumanCommand
from tests.helpers.agent import find, show, wait_for
from tests.helpers.telegram import (
    ADMIN,
    CHAT,
    STRANGER,
    answers,
    buttons,
    configure,
    guard_run,
    http_playbook,
    incident_message,
    write_http_skill,
)


def refusals(home) -> list[AuditEntry]:
    with home.database().session() as s:
        return list(s.exec(select(AuditEntry).where(AuditEntry.action == "telegram.refused")))


def commands(home) -> list[HumanCommand]:
    with home.database().session() as s:
        return list(s.exec(select(HumanCommand)))


@contextlib.contextmanager
def asked(home, tg, service, *, skill: bool = True, **config: Any) -> Iterator[tuple[dict, dict]]:
    """``guard run`` with a failing web check it has asked about: (the incident, its message)."""
    http_playbook(home, service)
    if skill:
        write_http_skill(home, service)
    configure(home, tg, **config)
    with guard_run(home):
        inc = wait_for(lambda: find(home, state="awaiting_human"), 30, "Guard to ask")
        yield inc, incident_message(tg, inc["id"])


def test_buttons_only_work_for_the_allowlist_once_and_in_time(home, tg, service):
    with asked(home, tg, service) as (inc, msg):
        mid = msg["message_id"]
        by_label = dict(buttons(msg))
        run = next(d for label, d in by_label.items() if "web-fix" in label)
        deny = next(d for label, d in by_label.items() if "Deny" in label)

        # a stranger, forged data, an expired approval, a button moved to another message
        tg.press(STRANGER, run, chat_id=CHAT, message_id=mid)
        tg.press(ADMIN, "forged-callback-data-0123456789", chat_id=CHAT, message_id=mid)
        with home.database().session() as s:
            row = s.get(Approval, deny)
            row.expires_at = utcnow() - timedelta(seconds=1)
            s.add(row)
        tg.press(ADMIN, deny, chat_id=CHAT, message_id=mid)
        wait_for(lambda: len(answers(tg)) >= 3, 20, "three refusals")
        tg.say(ADMIN, "/help", chat_id=CHAT)  # another message of Guard's
        other = wait_for(lambda: tg.bot_messages("/mute TARGET"), 20, "help")[0]
        tg.press(ADMIN, run, chat_id=CHAT, message_id=other["message_id"])
        wait_for(lambda: len(answers(tg)) >= 4, 20, "four refusals")
        assert all(a.startswith("Refused") for a in answers(tg)), answers(tg)
        assert "allowlist" in answers(tg)[0]
        assert "forged" in answers(tg)[1] and "expired" in answers(tg)[2]
        assert "does not belong" in answers(tg)[3]
        reasons = [r.data["reason"] for r in refusals(home)]
        assert len(reasons) == 4 and reasons[0].endswith("allowlist")
        assert refusals(home)[0].actor == f"telegram:{STRANGER}"
        assert commands(home) == [] and service.fixes == 0
        with home.database().session() as s:
            assert s.get(Approval, run).used_at is None
        assert show(home, inc["id"])["state"] == "awaiting_human"

        # the allowlisted user approves: the skill runs, the message says how it ended
        tg.press(ADMIN, run, chat_id=CHAT, message_id=mid)
        wait_for(lambda: show(home, inc["id"])["state"] == "resolved", 30, "the skill to heal")
        assert service.fixes == 1
        final = wait_for(
            lambda: next(
                (
                    m
                    for m in tg.bot_messages()
                    if m["message_id"] == mid and "Resolved" in m["text"]
                ),
                None,
            ),
            20,
            "the message to say it is resolved",
        )
        assert "reply_markup" not in final  # the buttons are gone
        assert "healed by skill web-fix" in final["text"]
        thread = wait_for(
            lambda: [
                m
                for m in tg.bot_messages()
                if m.get("reply_to_message", {}).get("message_id") == mid
            ],
            20,
            "the outcome in the thread",
        )
        assert any("Resolved" in m["text"] for m in thread)
        (cmd,) = commands(home)
        assert (cmd.verb, cmd.skill, cmd.actor, cmd.channel) == (
            "approve",
            "web-fix",
            f"telegram:{ADMIN}",
            "telegram",
        )

        # the same press again: a replay
        tg.press(ADMIN, run, chat_id=CHAT, message_id=mid)
        wait_for(lambda: len(answers(tg)) >= 6, 20, "the replay's refusal")
        assert answers(tg)[-1].startswith("Refused") and "answered" in answers(tg)[-1]
        assert len(refusals(home)) == 5 and len(commands(home)) == 1 and service.fixes == 1


def test_a_fix_sent_as_a_reply_is_verified_learned_and_said_in_the_thread(home, tg, service):
    with asked(home, tg, service, skill=False) as (inc, msg):  # no skill at all
        mid = msg["message_id"]
        fix = f"http.request {service.base}/fix"
        tg.say(STRANGER, fix, chat_id=CHAT, reply_to=mid)  # refused, audited, nothing runs
        wait_for(lambda: refusals(home), 20, "the stranger's refusal")
        assert commands(home) == [] and service.fixes == 0
        # "send a fix" prompts; the admin replies to the prompt
        send_fix = next(
            d for label, d in buttons(incident_message(tg, inc["id"])) if "Send a fix" in label
        )
        tg.press(ADMIN, send_fix, chat_id=CHAT, message_id=mid)
        prompt = wait_for(
            lambda: next((m for m in tg.bot_messages("Reply to this message")), None),
            20,
            "the fix prompt",
        )
        assert prompt["reply_to_message"]["message_id"] == mid
        tg.say(ADMIN, fix, chat_id=CHAT, reply_to=prompt["message_id"])
        wait_for(lambda: show(home, inc["id"])["state"] == "resolved", 40, "the fix to cure")
        done = show(home, inc["id"])
        skill = done["details"]["learned_skill"]
        assert (home.root / "skills" / skill / "skill.yaml").is_file()
        said = wait_for(
            lambda: [
                m
                for m in tg.bot_messages("saved as skill")
                if m.get("reply_to_message", {}).get("message_id") == mid
            ],
            20,
            "the thread to say it was learned",
        )
        assert skill in said[0]["text"] and "verified" in said[0]["text"]
        (cmd,) = commands(home)
        assert (cmd.verb, cmd.actor, cmd.channel, cmd.fix) == (
            "reply",
            f"telegram:{ADMIN}",
            "telegram",
            fix,
        )


def test_an_empty_allowlist_refuses_everyone_and_audits_it(home, tg, service):
    # fail closed: nobody, not even ADMIN
    with asked(home, tg, service, telegram={"allowed_user_ids": []}) as (inc, msg):
        mid = msg["message_id"]
        for _, data in buttons(msg):  # run the skill, send a fix, deny, mute
            tg.press(ADMIN, data, chat_id=CHAT, message_id=mid)
        wait_for(lambda: len(answers(tg)) >= 4, 20, "four refusals")
        tg.say(ADMIN, f"/fix {inc['id']} http.request {service.base}/fix", chat_id=CHAT)
        tg.say(ADMIN, f"http.request {service.base}/fix", chat_id=CHAT, reply_to=mid)
        tg.say(ADMIN, "/help", chat_id=CHAT)
        assert all(a.startswith("Refused: no one is allowed yet") for a in answers(tg)), answers(tg)
        # One audit entry per refused user and window, not one per press or message: the
        # first press is audited; the rest of the window is counted, not written or answered.
        audited = wait_for(lambda: refusals(home), 20, "the audit entry")
        time.sleep(1.0)  # the other presses and messages are handled meanwhile
        assert len(refusals(home)) == 1
        assert audited[0].actor == f"telegram:{ADMIN}"
        assert "telegram.allowed_user_ids is empty" in audited[0].data["reason"]
        assert audited[0].subject in {f"callback:{d}" for _, d in buttons(msg)}
        assert not tg.bot_messages("Refused")
        # nothing ran, nothing was spent, nobody was prompted, the question is still open
        assert commands(home) == [] and service.fixes == 0
        with home.database().session() as s:
            assert all(a.used_at is None for a in s.exec(select(Approval)))
        assert not tg.bot_messages("Reply to this message")
        assert show(home, inc["id"])["state"] == "awaiting_human"
        assert "reply_markup" in tg.messages[(CHAT, mid)]


def test_deny_escalates_and_closes_the_message(home, tg, service):
    with asked(home, tg, service) as (inc, msg):
        mid = msg["message_id"]
        deny = next(d for label, d in buttons(msg) if "Deny" in label)
        tg.press(ADMIN, deny, chat_id=CHAT, message_id=mid)
        wait_for(lambda: show(home, inc["id"])["state"] == "escalated", 30, "the escalation")
        final = wait_for(
            lambda: next(
                (m for m in tg.bot_messages("Denied by telegram:42") if m["message_id"] == mid),
                None,
            ),
            20,
            "the message to say who denied it",
        )
        assert "reply_markup" not in final and "Escalated" in final["text"]
        assert final["text"].startswith(f"<b>Incident #{inc['id']}</b>")
        said = wait_for(
            lambda: [
                m
                for m in tg.bot_messages("deny by telegram:42")
                if m.get("reply_to_message", {}).get("message_id") == mid
            ],
            20,
            "the outcome in the thread",
        )
        assert "no remedy will run" in said[0]["text"]
        assert answers(tg)[-1].startswith("Denied by telegram:42")
        (cmd,) = commands(home)
        assert (cmd.verb, cmd.actor, cmd.channel, cmd.status) == (
            "deny",
            f"telegram:{ADMIN}",
            "telegram",
            "done",
        )
        assert service.fixes == 0
        with home.database().session() as s:
            pressed = s.exec(
                select(AuditEntry).where(AuditEntry.action == "telegram.pressed")
            ).one()
            assert pressed.data["kind"] == "deny"
            assert all(a.used_at is not None for a in s.exec(select(Approval)))
        # a press on another of its buttons now is refused: the question was answered
        run = next(d for label, d in buttons(msg) if "web-fix" in label)
        tg.press(ADMIN, run, chat_id=CHAT, message_id=mid)
        wait_for(lambda: len(answers(tg)) >= 2, 20, "the late press's refusal")
        assert answers(tg)[-1].startswith("Refused") and service.fixes == 0
        assert len(commands(home)) == 1
