"""429s, an outage and a restart: monitoring goes on and every queued message is delivered;
an update Telegram offers again after a restart is not handled twice."""

from __future__ import annotations

from sqlmodel import col, select

from guard.store.models import HumanCommand, OutboxMessage
from tests.helpers.agent import find, wait_for
from tests.helpers.telegram import (
    ADMIN,
    CHAT,
    configure,
    guard_run,
    http_playbook,
    incident_message,
)


def pending(home) -> int:
    with home.database().session() as s:
        unsent = col(OutboxMessage.status).in_(("pending", "in_flight"))
        return len(s.exec(select(OutboxMessage).where(unsent)).all())


def test_429_outage_and_restart_lose_nothing(home, tg):
    log = home.root / "app.log"
    log.write_text("")
    home.playbook(
        "logs",
        [
            {
                "id": "applog",
                "type": "logfile",
                "path": str(log),
                "every": "1s",
                "rules": [{"kind": k.lower(), "pattern": k} for k in ("ALPHA", "BRAVO", "CHARLIE")],
            }
        ],
    )
    configure(home, tg)

    def write(line: str) -> None:
        with open(log, "a") as f:
            f.write(line + "\n")

    tg.fail("sendMessage", 429, times=2, retry_after=1)
    with guard_run(home):
        write("ALPHA failed")
        wait_for(lambda: tg.bot_messages("Incident #1"), 40, "incident 1 despite two 429s")
        attempts = [c["at"] for c in tg.sent() if "Incident #1" in str(c["params"].get("text"))]
        assert len(attempts) == 3
        assert attempts[1] - attempts[0] >= 0.95 and attempts[2] - attempts[1] >= 0.95

        tg.stop()  # Telegram goes away
        write("BRAVO failed")
        wait_for(
            lambda: find(home, kind="bravo", state="awaiting_human"),
            30,
            "monitoring and the agent to go on during the outage",
        )
        wait_for(lambda: pending(home) >= 1, 10, "the message to wait in the outbox")

    with guard_run(home):  # restarted while Telegram is still down
        write("CHARLIE failed")
        wait_for(
            lambda: find(home, kind="charlie", state="awaiting_human"),
            30,
            "monitoring after the restart",
        )
        assert pending(home) >= 2
        tg.start()  # back, on the same port
        wait_for(
            lambda: tg.bot_messages("Incident #2") and tg.bot_messages("Incident #3"),
            60,
            "the queued messages once Telegram is back",
        )
        wait_for(lambda: pending(home) == 0, 20, "an empty outbox")
    for n in (1, 2, 3):
        assert (
            len([m for m in tg.bot_messages(f"Incident #{n}") if "reply_to_message" not in m]) == 1
        )


def test_an_update_offered_again_to_a_restarted_guard_is_handled_once(home, tg, service):
    http_playbook(home, service)
    configure(home, tg)
    with guard_run(home):
        question = incident_message(tg, 1)
        reply = tg.say(
            ADMIN, f"http.request {service.base}/fix", chat_id=CHAT, reply_to=question["message_id"]
        )
        wait_for(lambda: find(home, state="resolved"), 60, "the fix to cure the incident")
    tg.redeliver(reply)  # as if Guard had died before its next poll confirmed the reply
    with guard_run(home) as log:
        skipped = f"telegram update {reply} was handled before; skipped"
        wait_for(lambda: skipped in log.read_text(), 30, "the restarted Guard to skip it")
    with home.database().session() as s:
        assert len(s.exec(select(HumanCommand)).all()) == 1
    assert len(tg.bot_messages("Running your fix")) == 1
