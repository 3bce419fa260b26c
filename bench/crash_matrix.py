"""``bench.crash``'s Matrix scenario: the Slack scenario's story (``bench.crash_slack``) in a
room of a real Synapse on 127.0.0.1 (``tests/helpers/synapse.py``: SQLite, users registered by
shared secret; started per case, or the test session's given to ``Matrix(homeserver)``). The
check (``posts``): every outbox row was sent, and the room holds exactly one event of the bot's
with each post's content (an edit, ``m.replace``, is not a post)."""

from __future__ import annotations

import uuid
from typing import Any

from bench.crash_run import Run
from bench.crash_slack import CHAT_POINTS, ChatScenario
from guard.notify.matrix import content
from guard.notify.matrix.channel import ANSWERED
from tests.helpers.synapse import Homeserver


class Matrix(ChatScenario):
    name = "matrix"
    channel = "matrix"
    points = (*CHAT_POINTS, "report.sent_before_mark:2")  # and the chart, uploaded then posted
    what = (
        "the slack scenario in a room of a real Synapse (127.0.0.1, SQLite): Guard asks, "
        "`guard report daily` posts the report and its chart, the service recovers, the "
        "incident auto-resolves and the question is edited (`m.replace`)"
    )

    def __init__(self, homeserver: Homeserver | None = None) -> None:
        self.homeserver = homeserver  # None: one started for each case

    def configure(self, run: Run) -> dict[str, Any]:
        hs = self.homeserver or Homeserver(run.home.root / "synapse").start()
        run.notes["hs"] = hs
        tag = uuid.uuid4().hex[:8]
        bot, ops = hs.register(f"guard{tag}"), hs.register(f"ops{tag}")
        run.notes["room"] = hs.room(ops, bot)
        run.notes["ops"], run.notes["bot"] = ops, bot
        return {
            "homeserver": hs.url,
            "user_id": bot.user_id,
            "access_token": bot.access_token,  # Run.start passes no GUARD_ variable
            "room_id": run.notes["room"],
            "sync_timeout": "1s",
            "group_wait": "0s",
        }

    def teardown(self, run: Run) -> None:
        if self.homeserver is None and "hs" in run.notes:
            run.notes["hs"].stop()

    def _posts(self, run: Run) -> list[dict[str, Any]]:
        """The bot's events in the room that are posts (not edits, nor a press's answer)."""
        events = run.notes["hs"].messages(run.notes["ops"], run.notes["room"], limit=500)
        return [
            e
            for e in events
            if e["sender"] == run.notes["bot"].user_id
            and e["type"] == "m.room.message"
            and "m.new_content" not in e["content"]
            and not e["content"].get(ANSWERED)
        ]

    def received(self, run: Run, row: dict[str, Any]) -> int:
        if row["method"] == "photo":
            caption = content.plain(row["text"]) or "chart.png"
            return sum(
                e["content"].get("msgtype") == "m.image" and e["content"]["body"] == caption
                for e in self._posts(run)
            )
        rows = [[(str(label), str(data)) for label, data in r] for r in row["buttons"]]
        wanted = content.message(row["text"], rows)
        return sum(content.same(e["content"], wanted) for e in self._posts(run))

    def asked(self, run: Run) -> bool:
        return any("Incident #" in e["content"].get("body", "") for e in self._posts(run))

    def reported(self, run: Run) -> bool:
        return any(e["content"].get("msgtype") == "m.image" for e in self._posts(run))

    def closed(self, run: Run) -> bool:
        events = run.notes["hs"].messages(run.notes["ops"], run.notes["room"], limit=500)
        return any("m.new_content" in e["content"] for e in events)
