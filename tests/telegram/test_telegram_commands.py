"""Commands and the mute button on a real `guard run`; every message kept in conversation memory;
`/fix` in the learning loop; `/incidents` and `/report`."""

from __future__ import annotations

import re

from sqlmodel import col, select

from guard.memory.conversation import history
from guard.store.models import AuditEntry, HumanCommand
from tests.helpers.agent import find, show, wait_for
from tests.helpers.telegram import (
    ADMIN,
    CHAT,
    STRANGER,
    buttons,
    configure,
    guard_run,
    http_playbook,
    incident_message,
)


def reply_to_command(tg, text: str, within: float = 20) -> str:
    return wait_for(
        lambda: next((m["text"] for m in tg.bot_messages(text)), None),
        within,
        f"a message containing {text!r}",
    )


def test_commands_mute_and_memory(home, tg, service):
    http_playbook(home, service, auto_resolve=True)
    configure(home, tg)
    with guard_run(home):
        inc = wait_for(lambda: find(home, state="awaiting_human"), 30, "Guard to ask")
        tg.say(STRANGER, "/status", chat_id=CHAT)
        reply_to_command(tg, "Refused")
        with home.database().session() as s:
            refused = s.exec(
                select(AuditEntry).where(AuditEntry.action == "telegram.refused")
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
        wait_for(
            lambda: next(
                (
                    m
                    for m in tg.bot_messages("Muted by telegram:42")
                    if m["message_id"] == msg["message_id"] and "reply_markup" not in m
                ),
                None,
            ),
            60,
            "the buttons to go",
        )
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


def in_thread(tg, mid: int, text: str) -> list[dict]:
    return [
        m for m in tg.bot_messages(text) if m.get("reply_to_message", {}).get("message_id") == mid
    ]


def test_fix_command_goes_into_the_learning_loop(home, tg, service):
    http_playbook(home, service)  # no skill: only a human's fix can cure it
    configure(home, tg)
    with guard_run(home):
        inc = wait_for(lambda: find(home, state="awaiting_human"), 30, "Guard to ask")
        mid = incident_message(tg, inc["id"])["message_id"]
        # a fix that runs but does not cure: nothing is saved, the thread says why
        miss = f"http.request {service.base}/nothing"
        tg.say(ADMIN, f"/fix {inc['id']} {miss}", chat_id=CHAT)
        wait_for(
            lambda: in_thread(tg, mid, f"Running your fix for incident #{inc['id']}"),
            20,
            "the fix to be taken",
        )
        (said,) = wait_for(lambda: in_thread(tg, mid, "did not cure"), 40, "the verdict")
        assert miss in said["text"] and "Nothing was saved" in said["text"]
        wait_for(
            lambda: show(home, inc["id"])["state"] == "awaiting_human",
            20,
            "the incident to wait for a human again",
        )
        assert not (home.root / "skills").is_dir() or not any((home.root / "skills").iterdir())
        # the fix that cures: verified, learned as a skill, and said in the thread
        fix = f"http.request {service.base}/fix"
        tg.say(ADMIN, f"/fix #{inc['id']} {fix}", chat_id=CHAT)
        wait_for(lambda: show(home, inc["id"])["state"] == "resolved", 40, "the fix to cure")
        skill = show(home, inc["id"])["details"]["learned_skill"]
        assert (home.root / "skills" / skill / "skill.yaml").is_file()
        (learned,) = wait_for(
            lambda: in_thread(tg, mid, "saved as skill"), 20, "the thread to say it was learned"
        )
        assert skill in learned["text"] and "verified" in learned["text"]
        assert service.fixes == 1
    with home.database().session() as s:
        cmds = s.exec(select(HumanCommand).order_by(col(HumanCommand.id))).all()
    assert [(c.verb, c.actor, c.channel, c.fix, c.status) for c in cmds] == [
        ("reply", f"telegram:{ADMIN}", "telegram", miss, "failed"),
        ("reply", f"telegram:{ADMIN}", "telegram", fix, "done"),
    ]


def test_incidents_and_report_commands(home, tg, service):
    http_playbook(home, service)
    configure(home, tg)
    with guard_run(home) as guard_log:
        inc = wait_for(lambda: find(home, state="awaiting_human"), 30, "Guard to ask")
        tg.say(ADMIN, "/incidents", chat_id=CHAT)
        listed = reply_to_command(tg, "open incident(s)")
        assert listed.startswith("<b>1 open incident(s)</b>")
        assert f"#{inc['id']} [awaiting_human] {inc['title']} x" in listed

        tg.say(STRANGER, "/report", chat_id=CHAT)  # refused: no report for strangers
        reply_to_command(tg, "Refused")
        assert not tg.bot_messages("Guard daily report") and not tg.sent("sendPhoto")
        tg.say(ADMIN, "/report", chat_id=CHAT)
        report = reply_to_command(tg, "Guard daily report")
        for line in (
            "Incidents opened: <b>1</b>",
            "Still open: <b>1</b>",
            "Noisiest targets",
            f"<code>{service.base}/healthz</code>",
        ):
            assert line in report, line
        (photo,) = wait_for(lambda: tg.sent("sendPhoto"), 20, "the chart")
        assert int(photo["params"]["chat_id"]) == CHAT
        assert photo["params"]["photo"].startswith(b"\x89PNG")
        assert photo["params"]["caption"] == "Incidents per hour"
        log = guard_log.read_text()
    # the HTTP endpoint is on loopback and a free port (never 0.0.0.0:8080)
    served = re.search(r"serving /healthz, /readyz and /metrics on http://([\d.]+):(\d+)", log)
    assert served is not None, log[-2000:]
    assert served.group(1) == "127.0.0.1" and served.group(2) not in ("0", "8080")


def test_webhook_mode_takes_updates_pushed_with_the_secret_only(home, tg, service):
    """telegram.mode: webhook: Guard registers its URL and a secret; Telegram (here, the local
    server) POSTs updates there; a POST without the secret changes nothing."""
    import json
    import urllib.error
    import urllib.request

    from bench.common import free_port

    port = free_port()
    url = f"http://127.0.0.1:{port}/telegram"
    http_playbook(home, service)
    configure(
        home,
        tg,
        telegram={"mode": "webhook", "webhook_url": url, "listen": "127.0.0.1", "port": port},
    )
    with guard_run(home):
        wait_for(lambda: tg.webhook is not None, 30, "Guard to register its webhook")
        assert tg.webhook["url"] == url and tg.webhook["secret"]
        assert not tg.sent("getUpdates")  # no polling in webhook mode
        tg.say(ADMIN, "/help", chat_id=CHAT)
        reply_to_command(tg, "/mute")
        assert [d["status"] for d in tg.deliveries] == [200]
        forged = urllib.request.Request(
            url,
            method="POST",
            data=json.dumps(
                {
                    "update_id": 999,
                    "message": {
                        "message_id": 999,
                        "date": 0,
                        "chat": {"id": CHAT, "type": "group"},
                        "from": {"id": ADMIN, "is_bot": False, "first_name": "x"},
                        "text": "/status",
                        "entities": [{"type": "bot_command", "offset": 0, "length": 7}],
                    },
                }
            ).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            urllib.request.urlopen(forged, timeout=10)
            status = 200
        except urllib.error.HTTPError as exc:
            status = exc.code
        assert status == 403  # no secret: refused before any handler sees it
        assert not tg.bot_messages("Monitors")
