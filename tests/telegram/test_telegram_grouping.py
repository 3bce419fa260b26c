"""One fault, one incident, one message on real `guard run`s: name storms, template storms and
grouped announcements, against the local Bot API server."""

from __future__ import annotations

import random
import string
import time

from tests.helpers.agent import incidents, show, wait_for
from tests.helpers.telegram import ADMIN, CHAT, buttons, configure, guard_run


def _announcements(tg) -> list[dict]:
    """Every message Guard sent that announces incidents (alone or grouped)."""
    return [
        m
        for m in tg.bot_messages()
        if "reply_to_message" not in m
        and (
            "Incident #" in m.get("text", "")
            or "incidents</b>" in m.get("text", "")
            or "incidents</b> opened together" in m.get("text", "")
        )
    ]


def test_500_lines_differing_in_the_user_name_are_one_incident_and_one_message(home, tg):
    log = home.root / "app.log"
    log.write_text("")
    home.playbook(
        "logs",
        [
            {
                "id": "app",
                "type": "logfile",
                "path": str(log),
                "every": "1s",
                "rules": [{"kind": "user_missing", "pattern": r"ERROR user \S+ not found"}],
            }
        ],
    )
    configure(home, tg)
    names = ["".join(random.Random(i).choices(string.ascii_lowercase, k=7)) for i in range(500)]
    with guard_run(home):
        wait_for(lambda: tg.sent("getUpdates"), 20, "polling to start")
        with open(log, "a") as f:
            for i, name in enumerate(names):
                f.write(
                    f"2026-12-03T10:{i // 60 % 60:02d}:{i % 60:02d}Z ERROR user {name} not found\n"
                )
        inc = wait_for(
            lambda: next((i for i in incidents(home) if i["count"] >= 500), None),
            60,
            "all 500 lines counted",
        )
        wait_for(lambda: _announcements(tg), 30, "the announcement")
        time.sleep(3)  # more checks, polls and sync rounds: nothing else goes out
        assert len(incidents(home)) == 1
        assert inc["count"] == 500 and inc["template"] == "user <*> not found"
        assert len(_announcements(tg)) == 1


def test_5000_distinct_messages_are_at_most_21_incidents_and_3_messages(home, tg):
    log = home.root / "app.log"
    log.write_text("")
    home.playbook(
        "logs",
        [
            {
                "id": "api-log",
                "type": "logfile",
                "path": str(log),
                "every": "1s",
                "rules": [{"kind": "api_error", "pattern": "ERROR"}],
            }
        ],
    )
    configure(home, tg)
    rnd = random.Random(5)

    def word() -> str:
        return "".join(rnd.choices(string.ascii_lowercase, k=rnd.randint(4, 9)))

    lines = [
        f"2026-12-03T10:00:00Z ERROR {word()} {word()} {word()} failed: {word()}\n"
        for _ in range(5000)
    ]
    assert len(set(lines)) == 5000
    with guard_run(home):
        wait_for(lambda: tg.sent("getUpdates"), 20, "polling to start")
        start = time.monotonic()
        with open(log, "a") as f:
            for batch in range(50):  # 5,000 lines over 10 s
                f.writelines(lines[batch * 100 : (batch + 1) * 100])
                f.flush()
                time.sleep(max(0.0, start + (batch + 1) * 0.2 - time.monotonic()))
        storm = wait_for(
            lambda: next(
                (
                    i
                    for i in incidents(home)
                    if i["kind"] == "storm" and i["count"] + 20 >= 5000 - 500
                ),
                None,
            ),
            90,
            "the storm incident",
        )
        wait_for(
            lambda: sum(i["count"] for i in incidents(home)) >= 5000, 90, "all 5,000 lines counted"
        )
        wait_for(lambda: len(_announcements(tg)) >= 2, 120, "the grouped announcement")
        # on a loaded machine the agent may ask about the last ones well after the first group
        wait_for(
            lambda: all(
                f"#{i['id']}" in " ".join(m["text"] for m in _announcements(tg))
                for i in incidents(home)
            ),
            120,
            "every incident announced",
        )
        time.sleep(12)  # past another group_wait: nothing else goes out
        found = incidents(home)
        assert len(found) <= 21, len(found)
        assert sum(i["count"] for i in found) == 5000
        announced = _announcements(tg)
        assert len(announced) <= 3, [m["text"][:80] for m in announced]
        storm = show(home, storm["id"])
        assert storm["title"].startswith("storm on api-log: ")
        top = storm["details"]["top_templates"]
        assert len(top) == 10 and all(t["count"] >= 1 for t in top)
        assert all(t["template"].startswith("api_error: ") for t in top)
        # every incident was announced, each with its own buttons in a grouped message
        texts = " ".join(m["text"] for m in announced)
        assert all(f"#{i['id']}" in texts for i in found)
        grouped = next((m for m in announced if "incidents</b> opened together" in m["text"]), None)
        assert grouped is not None, [m["text"][:120] for m in announced]
        labels = [label for label, _ in buttons(grouped)]
        assert len(labels) <= 100 and all(label.startswith("#") for label in labels)


def test_a_grouped_message_acts_on_one_incident_at_a_time(home, tg, service):
    log = home.root / "app.log"
    log.write_text("")
    home.playbook(
        "logs",
        [
            {
                "id": "app",
                "type": "logfile",
                "path": str(log),
                "every": "1s",
                "rules": [{"kind": "app_error", "pattern": "ERROR"}],
            }
        ],
    )
    configure(home, tg, telegram={"group_wait": "3s"})
    with guard_run(home):
        wait_for(lambda: tg.sent("getUpdates"), 20, "polling to start")
        with open(log, "a") as f:
            f.write("ERROR disk is full on /var\n")
        wait_for(lambda: len(_announcements(tg)) == 1, 30, "the first announcement, at once")
        with open(log, "a") as f:  # within group_wait of the first: announced together
            f.write("ERROR payment provider returned 502\nERROR cache warmup never finished\n")
        group = wait_for(
            lambda: next((m for m in _announcements(tg) if "2 incidents" in m["text"]), None),
            30,
            "the group",
        )
        ids = sorted(i["id"] for i in incidents(home))[1:]
        assert all(f"#{i}" in group["text"] for i in ids)
        deny = next(
            data
            for label, data in buttons(group)
            if label.startswith(f"#{ids[0]} ") and "Deny" in label
        )
        tg.press(ADMIN, deny, chat_id=CHAT, message_id=group["message_id"])
        wait_for(lambda: show(home, ids[0])["state"] == "escalated", 30, "the deny")

        def edited() -> dict | None:
            msg = next(m for m in tg.bot_messages() if m["message_id"] == group["message_id"])
            labels = [label for label, _ in buttons(msg)]
            done = not any(x.startswith(f"#{ids[0]} ") for x in labels)
            return msg if done and any(x.startswith(f"#{ids[1]} ") for x in labels) else None

        msg = wait_for(edited, 30, "the group message edited for the denied incident only")
        assert f"<s>#{ids[0]}</s>" in msg["text"] or f"#{ids[0]}" in msg["text"]
        # a reply naming the other incident sends it a fix
        tg.say(
            ADMIN,
            f"#{ids[1]} http.request {service.base}/fix",
            chat_id=CHAT,
            reply_to=group["message_id"],
        )
        wait_for(lambda: service.fixes == 1, 30, "the fix for the named incident")

        def line_closed() -> bool:
            msg = next(m for m in tg.bot_messages() if m["message_id"] == group["message_id"])
            return f"<s>#{ids[1]}</s>" in msg["text"]

        wait_for(line_closed, 60, "the fixed incident's line closed in the group message")
        # its outcome edits the group message; no separate post per incident
        assert not tg.bot_messages(f"· incident #{ids[1]}")
        # a reply naming no incident of the message runs nothing and says how to reply
        tg.say(
            ADMIN, f"http.request {service.base}/fix", chat_id=CHAT, reply_to=group["message_id"]
        )
        wait_for(lambda: tg.bot_messages("reply <code>#ID FIX</code>"), 30, "the hint")
        assert service.fixes == 1
