"""An incident with no skill: one message with buttons, however big the storm (real guard run)."""

from __future__ import annotations

import time

from guard.memory.conversation import history
from tests.helpers.agent import incidents, wait_for
from tests.helpers.telegram import CHAT, TOKEN, buttons, configure, guard_run, incident_message


def test_a_storm_of_10000_lines_is_one_message_with_buttons(home, tg):
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
                "rules": [{"kind": "db_down", "pattern": "database unreachable"}],
            }
        ],
    )
    configure(home, tg, log_level="DEBUG")
    with guard_run(home) as guard_log:
        wait_for(lambda: tg.sent("getUpdates"), 20, "polling to start")
        with open(log, "a") as f:
            for i in range(10_000):
                f.write(f"2024-01-01 ERROR request {i}: database unreachable <db@10.0.0.5>\n")
        inc = wait_for(
            lambda: next((i for i in incidents(home) if i["count"] >= 10_000), None),
            60,
            "all 10,000 lines counted",
        )
        msg = incident_message(tg, inc["id"])
        time.sleep(3)  # several more polls, checks and sync rounds: nothing else goes out
        sent = tg.bot_messages("Incident #")
        assert len(sent) == 1, [m["text"][:80] for m in sent]
        assert len(incidents(home)) == 1
        labels = [label for label, _ in buttons(msg)]
        assert any("Send a fix" in x for x in labels) and any("Deny" in x for x in labels)
        assert any("Mute" in x for x in labels)
        assert all(0 < len(data.encode()) <= 64 for _, data in buttons(msg))
        call = next(c for c in tg.sent() if "Incident #" in str(c["params"].get("text")))
        assert call["params"]["parse_mode"] == "HTML"
        assert "database unreachable &lt;db@10.0.0.5&gt;" in call["params"]["text"]  # escaped
        assert len(call["params"]["text"]) <= 4096
        text = guard_log.read_text()
    assert TOKEN not in text and TOKEN.split(":")[1] not in text  # DEBUG logging, no token
    assert any("Incident #" in m.text for m in history(home.database(), str(CHAT)))
