"""Playbooks edited under a real ``guard run``: applied without a restart, or, when invalid,
refused with one ``playbook_invalid`` incident while the last good config keeps running."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import GuardHome
from tests.fakes.telegram import TelegramServer
from tests.helpers.agent import db_rows, find, incidents, running_guard, wait_for
from tests.helpers.telegram import configure, guard_run, incident_message


def logfile(id_: str, path: Path, *kinds: str) -> dict[str, Any]:
    return {
        "id": id_,
        "type": "logfile",
        "path": str(path),
        "every": "200ms",
        "rules": [{"kind": k, "pattern": k.upper()} for k in kinds],
    }


def append(path: Path, line: str) -> None:
    with path.open("a") as f:
        f.write(line + "\n")


def reloads(home: GuardHome) -> list[dict[str, Any]]:
    rows = db_rows(home, "select data from audit_log where action='playbooks.reloaded'")
    return [json.loads(data) for (data,) in rows]


def of_kind(home: GuardHome, kind: str) -> list[dict[str, Any]]:
    return [i for i in incidents(home) if i["kind"] == kind]


def test_an_invalid_edit_keeps_the_last_good_config_and_a_fix_applies(home: GuardHome) -> None:
    app, other = home.root / "app.log", home.root / "other.log"
    app.touch()
    other.touch()
    home.write_config(
        {"agent": {"enabled": False}, "playbooks_watch_every": "200ms", "http_port": 0}
    )
    good = [logfile("app", app, "boom", "fatal")]
    book = home.playbook("web", good)
    with running_guard(home):
        append(app, "BOOM request 1")
        boom = wait_for(lambda: find(home, kind="boom"), 30, "the boom incident")

        # broken: line 7 says `every: soon`
        broken = [*good, {**logfile("extra", other, "boom"), "every": "soon"}]
        book.write_text(yaml.safe_dump({"name": "web", "monitors": broken}, sort_keys=False))
        line = book.read_text().splitlines().index("  every: soon") + 1
        bad = wait_for(lambda: of_kind(home, "playbook_invalid"), 30, "playbook_invalid")
        assert len(bad) == 1 and bad[0]["target"] == str(book)
        assert "web.yaml" in bad[0]["message"] and f"(line {line})" in bad[0]["message"]

        append(app, "FATAL while the playbook is broken")  # the old monitor still checks
        wait_for(lambda: find(home, kind="fatal"), 30, "the fatal incident")
        book.write_text(book.read_text())  # the same invalid text again: no second incident
        time.sleep(1.0)  # five polls
        assert len(of_kind(home, "playbook_invalid")) == 1

        # fixed: the extra monitor is valid now; the app monitor is unchanged
        fixed = [*good, logfile("extra", other, "boom")]
        book.write_text(yaml.safe_dump({"name": "web", "monitors": fixed}, sort_keys=False))
        wait_for(
            lambda: of_kind(home, "playbook_invalid")[0]["state"] == "resolved",
            30,
            "the playbook_invalid incident to resolve",
        )
        assert reloads(home) == [
            {"added": ["extra"], "removed": [], "changed": [], "playbooks": []}
        ]
        append(other, "BOOM from the new monitor")
        wait_for(lambda: find(home, kind="boom", monitor_id="extra"), 30, "the extra monitor")
        # the unchanged monitor was not restarted: its cursor neither re-read nor skipped
        append(app, "BOOM request 2")
        wait_for(lambda: find(home, id=boom["id"], count=2), 30, "the second boom line")
        assert len(of_kind(home, "fatal")) == 1

        # removed without a restart
        home.playbook("web", fixed[1:])
        wait_for(lambda: len(reloads(home)) == 2, 30, "the second reload")
        assert reloads(home)[1]["removed"] == ["app"]
    assert find(home, id=boom["id"], count=2)  # nothing more was read from app.log


def test_telegram_hears_of_a_broken_playbook_once_and_of_its_fix(
    home: GuardHome, tg: TelegramServer
) -> None:
    configure(home, tg, playbooks_watch_every="200ms")
    app = home.root / "app.log"
    app.touch()
    book = home.playbook("web", [logfile("app", app, "boom")])
    with guard_run(home):
        book.write_text(book.read_text().replace("every: 200ms", "every: soon"))
        msg = incident_message(tg)
        assert "playbook" in msg["text"] and "web.yaml" in msg["text"]
        line = book.read_text().splitlines().index("  every: soon") + 1
        assert "monitors[0].every: invalid duration 'soon'" in msg["text"]
        assert f"(line {line})" in msg["text"]
        book.write_text(book.read_text())  # the same broken text: nothing new is sent
        book.write_text(book.read_text().replace("every: soon", "every: 1s"))
        wait_for(lambda: reloads(home), 30, "the reload")
        incident = wait_for(
            lambda: find(home, kind="playbook_invalid", state="resolved"), 30, "the resolve"
        )
    about = [m for m in tg.bot_messages(f"#{incident['id']}") if "reply_to_message" not in m]
    assert len(about) == 1, about  # one message, edited as the incident moved on
