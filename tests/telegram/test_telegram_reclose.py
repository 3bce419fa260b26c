"""Issue 44 on a real ``guard run`` against the local Bot API server: a question closed for an
incident that was resolved from the CLI and reopened at once lands on the OLD question, never
on the new grouped message that asks about the reopened incident."""

from __future__ import annotations

import time

from tests.helpers.agent import db_rows, show, wait_for
from tests.helpers.telegram import Service, buttons, configure, guard_run


def test_a_close_edit_queued_for_the_old_question_never_lands_on_the_reopened_ones(home, tg):
    down, later = Service(), Service()  # down fails from the start; later once the test says
    later.healthy = True
    home.playbook(
        "web",
        [
            {"id": "down", "type": "http", "url": f"{down.base}/healthz", "every": "1s"},
            {"id": "later", "type": "http", "url": f"{later.base}/healthz", "every": "1s"},
        ],
    )
    # the agent looks every 3s: the sync sees the reopened incident "open" before it is asked
    # again (the colleague's order: the close edit queued between the two announcements)
    configure(home, tg, telegram={"group_wait": "20s"}, agent={"poll_interval": "3s"})
    with guard_run(home):
        first = wait_for(lambda: tg.bot_messages("Incident #1"), 60, "incident 1 asked alone")[0]
        assert buttons(first)
        later.healthy = False  # incident 2 within group_wait: its announcement waits the window
        wait_for(
            lambda: db_rows(
                home, "select id from outbox where incident_id = 2 and role = 'incident'"
            ),
            30,
            "incident 2's question queued",
        )
        resolved = home.cli("resolve", "1")  # its check still fails: it reopens, is asked again
        assert "incident #1 resolved" in resolved.stdout, resolved.stdout

        def group() -> dict | None:
            return next(
                (m for m in tg.bot_messages("#1") if "#2" in m["text"] and buttons(m)), None
            )

        grouped = wait_for(group, 60, "incidents 1 and 2 asked together")
        assert show(home, 1)["reopen_count"] >= 1

        def now(message_id: int) -> dict:
            return next(m for m in tg.bot_messages() if m["message_id"] == message_id)

        wait_for(lambda: not buttons(now(first["message_id"])), 60, "the old question closed")
        time.sleep(4)  # the sync's rounds: any edit still to come is queued
        wait_for(
            lambda: not db_rows(home, "select id from outbox where status = 'pending'"),
            60,
            "every queued edit out",
        )

        new, old = now(grouped["message_id"]), now(first["message_id"])
        labels = [label for label, _ in buttons(new)]
        assert any(x.startswith("#1 ") for x in labels), labels  # the new question still asks
        assert any(x.startswith("#2 ") for x in labels), labels
        assert "Handled outside" not in new["text"], new["text"]
        assert not buttons(old), old  # the old question is the one closed
        assert "Handled outside this chat" in old["text"], old["text"]
