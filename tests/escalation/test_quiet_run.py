"""Quiet hours on a real ``guard run`` against the local Bot API server: a warning's question,
inside the window, is held (nothing posted, no reminder) while the incident waits for a human.
It holds because ``guard/app/wiring.py`` puts ``wrap_quiet`` around the agent's notifier."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from sqlmodel import select

from guard.store.escalation import QuietHeld
from tests.helpers.agent import find, show, wait_for
from tests.helpers.telegram import configure, guard_run


def test_a_warning_asked_in_quiet_hours_is_held(home, tg, service):
    now = datetime.now(UTC)
    home.playbook(
        "web",
        [
            {
                "id": "web",
                "type": "http",
                "url": f"{service.base}/healthz",
                "every": "1s",
                "severity": "warning",
            }
        ],
    )
    window = {
        "from": (now - timedelta(hours=2)).strftime("%H:%M"),
        "to": (now + timedelta(hours=2)).strftime("%H:%M"),
        "timezone": "UTC",
    }
    configure(
        home, tg, quiet_hours=window, escalation={"check_every": "500ms", "remind_every": "1s"}
    )
    with guard_run(home):
        inc = wait_for(lambda: find(home, state="awaiting_human"), 60, "Guard to ask")
        wait_for(
            lambda: "question_held" in [e["type"] for e in show(home, inc["id"])["timeline"]],
            30,
            "the question held",
        )
        held_at = time.monotonic()  # a few escalation ticks and reminders' times pass
        wait_for(lambda: time.monotonic() - held_at > 3, 30, "three seconds")
        with home.database().session() as s:
            held = s.exec(select(QuietHeld)).one()
        assert held.released_at is None and held.incident_id == inc["id"]
        assert tg.bot_messages(f"Incident #{inc['id']}") == []
        assert tg.bot_messages("Reminder") == []
        assert "reminded" not in [e["type"] for e in show(home, inc["id"])["timeline"]]
