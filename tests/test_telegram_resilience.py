"""429s, an outage and a restart: monitoring goes on and every queued message is delivered."""

from __future__ import annotations

from sqlmodel import select

from guard.store.models import OutboxMessage
from tests.agent_helpers import find, wait_for
from tests.telegram_helpers import configure, guard_run, tg

__all__ = ["tg"]


def pending(home) -> int:
    with home.database().session() as s:
        return len(s.exec(select(OutboxMessage).where(OutboxMessage.status == "pending")).all())


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
