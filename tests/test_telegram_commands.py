"""Commands and the mute button on a real `guard run`; every message kept in conversation memory."""

from __future__ import annotations

from sqlmodel import select

from guard.memory.conversation import history
from guard.store.models import AuditEntry
from tests.agent_helpers import find, show, wait_for
from tests.telegram_helpers import (
    ADMIN,
    CHAT,
    STRANGER,
    buttons,
    configure,
    guard_run,
    http_playbook,
    incident_message,
    service,
    tg,
)

__all__ = ["service", "tg"]


def reply_to_command(tg, text: str, within: float = 20) -> str:
    return wait_for(lambda: next((m["text"] for m in tg.bot_messages(text)), None), within,
                    f"a message containing {text!r}")


def test_commands_mute_and_memory(home, tg, service):
    http_playbook(home, service, auto_resolve=True)
    configure(home, tg)
    with guard_run(home):
        inc = wait_for(lambda: find(home, state="awaiting_human"), 30, "Guard to ask")
        tg.say(STRANGER, "/status", chat_id=CHAT)
        reply_to_command(tg, "Refused")
        with home.database().session() as s:
            refused = s.exec(select(AuditEntry).where(AuditEntry.action == "telegram.refused")
                             ).all()
        assert [r.subject for r in refused] == ["command:status"]
        assert not tg.bot_messages("Guard status")

        tg.say(ADMIN, "/status", chat_id=CHAT)
        status = reply_to_command(tg, "Guard status")
        assert "🟢 web (http), last check" in status  # the monitor works (its target does not)
        assert f"#{inc['id']}" in status
        tg.say(ADMIN, "/help", chat_id=CHAT)
        reply_to_command(tg, "/mute TARGET DURATION")
        tg.say(ADMIN, "/skills", chat_id=CHAT)
        reply_to_command(tg, "No skills yet")
        tg.say(ADMIN, "/mute other-host 2h", chat_id=CHAT)
        reply_to_command(tg, "Muted other-host until")
        tg.say(ADMIN, "/unmute other-host", chat_id=CHAT)
        reply_to_command(tg, "Unmuted other-host")

        # the mute button: the incident is muted, its buttons go, the thread says so
        msg = incident_message(tg, inc["id"])
        mute = next(d for label, d in buttons(msg) if "Mute" in label)
        tg.press(ADMIN, mute, chat_id=CHAT, message_id=msg["message_id"])
        wait_for(lambda: show(home, inc["id"])["state"] == "muted", 60, "the incident muted")
        wait_for(lambda: next((m for m in tg.bot_messages("Muted by telegram:42")
                               if m["message_id"] == msg["message_id"]
                               and "reply_markup" not in m), None), 60, "the buttons to go")
        reply_to_command(tg, "muted " + service.base)
        # the target stays muted: a new incident for it is not announced
        service.healthy = True
        wait_for(lambda: show(home, inc["id"])["state"] == "resolved", 60, "auto-resolve")
        asked = len(tg.sent())
        service.healthy = False  # fails again: the incident reopens (a flap) or a new one opens
        muted = wait_for(lambda: find(home, state="muted"), 60, "the next incident to be muted")
        timeline = show(home, muted["id"])["timeline"]
        assert "is muted by telegram:42" in timeline[-1]["message"]
        new_messages = [c for c in tg.sent()[asked:] if c["method"] == "sendMessage"]
        assert not [c for c in new_messages if c["params"].get("reply_markup")]
    memory = history(home.database(), str(CHAT), limit=200)
    assert any(m.direction == "in" and m.text == "/status" for m in memory)
    assert any(m.direction == "in" and m.text.startswith("[pressed]") for m in memory)
    assert any(m.direction == "out" and "Guard status" in m.text for m in memory)
