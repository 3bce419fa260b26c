"""Every incident can end, and people can end it from the shell (issue #40, item 3), on a real
``guard run`` over a real log file: a log rule's incident resolves ``resolve_after`` after its
lines stop; ``guard resolve|mute|unmute`` end or hush one; a silence keeps matching incidents
from asking anyone until it expires, and each is audited."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.conftest import GuardHome
from tests.helpers.agent import db_rows, free_port, incidents, running_guard, show, wait_for

FULL = ("ERROR disk /dev/sda1 is full", "ERROR write failed: No space left on device")


DISK_RULE = {"kind": "disk_full", "pattern": "disk .* is full|No space left", "group_by": "rule"}


def setup_log_home(
    home: GuardHome,
    resolve_after: str | None = None,
    rules: tuple[dict[str, Any], ...] = (DISK_RULE,),
    **config: Any,
) -> Path:
    """A home watching one log file (service ``api``) whose disk-full rule groups by rule (or
    ``rules``), with more ``config``."""
    disk = home.root / "disk.log"
    disk.write_text("")
    ending = {"resolve_after": resolve_after} if resolve_after else {}
    watch = {"path": str(disk), "every": "200ms", "service": "api", **ending}
    home.playbook("api", [{"id": "disk", "type": "logfile", **watch, "rules": list(rules)}])
    home.write_config(
        {
            "data_dir": str(home.root / "data"),
            "playbooks_dir": str(home.playbooks),
            "skills_dir": str(home.root / "skills"),
            "agent": {"poll_interval": "200ms"},
            "http_host": "127.0.0.1",
            "http_port": free_port(),
            **config,
        }
    )
    return disk


def write(log: Path, *lines: str) -> None:
    with log.open("a") as f:
        f.writelines(line + "\n" for line in lines)


def timeline(home: GuardHome, incident_id: int, type_: str) -> list[dict[str, object]]:
    return [t for t in show(home, incident_id)["timeline"] if t["type"] == type_]


def test_a_log_rule_incident_ends_resolve_after_its_lines_stop(home: GuardHome) -> None:
    log = setup_log_home(home, resolve_after="3s")
    with running_guard(home):
        written: list[datetime] = []

        def keep_writing() -> None:  # the disk stays full for 4 s, in both wordings
            for i in range(16):
                write(log, FULL[i % 2])
                written.append(datetime.now(UTC))
                time.sleep(0.25)

        writer = threading.Thread(target=keep_writing)
        writer.start()
        (inc,) = wait_for(lambda: incidents(home), 20, "the incident")
        writer.join()
        # the writer's own clock: a CLI call on a loaded machine may return seconds after it
        last_line = written[-1]
        shown = show(home, inc["id"])
        assert shown["ends"].startswith("when no matching line for 3s (resolve_after)")
        wait_for(lambda: show(home, inc["id"])["state"] == "resolved", 30, "it to resolve")
    (only,) = incidents(home)  # one incident for both wordings
    assert only["count"] == 16
    resolved = datetime.fromisoformat(only["resolved_at"])
    assert 3.0 <= (resolved - last_line).total_seconds() < 3.0 + 4.0
    (moved,) = [
        t for t in timeline(home, inc["id"], "state_changed") if t["to_state"] == "resolved"
    ]
    assert moved["message"] == "no matching line for 3s (resolve_after)"
    text = home.cli("incidents", "show", str(inc["id"])).stdout
    assert "ends         when no matching line for 3s (resolve_after)" in text


def test_people_resolve_mute_and_unmute_from_the_cli(home: GuardHome) -> None:
    log = setup_log_home(home)
    with running_guard(home):
        write(log, FULL[0])
        (inc,) = wait_for(lambda: incidents(home), 20, "the incident")
        n = str(inc["id"])
        wait_for(lambda: timeline(home, inc["id"], "asked_human"), 30, "a question")
        muted = home.cli("mute", n, "--for", "1h")
        assert f"muted {log}" in muted.stdout and "for 1h" in muted.stdout, muted.stdout
        assert show(home, inc["id"])["state"] == "muted"
        unmuted = home.cli("unmute", n)
        assert f"unmuted {log}" in unmuted.stdout, unmuted.stdout
        wait_for(lambda: len(timeline(home, inc["id"], "asked_human")) == 2, 30, "asked again")
        denied = home.cli("deny", n)
        assert f"guard resolve {n}" in denied.stdout and f"guard mute {n}" in denied.stdout
        resolved = home.cli("resolve", n)
        assert f"incident #{n} resolved by cli:" in resolved.stdout, resolved.stdout
        assert show(home, inc["id"])["state"] == "resolved"
    actions = [
        a for (a,) in db_rows(home, "select action from audit_log where action like 'human.%'")
    ]
    assert actions == ["human.mute", "human.unmute", "human.deny", "human.resolve"], actions


def test_a_silence_records_but_asks_nobody_until_it_expires(home: GuardHome) -> None:
    log = setup_log_home(home)
    with running_guard(home):
        made = home.cli("silence", "service=api", "kind=disk_full", "--for", "10s").stdout
        write(log, FULL[0])  # at once: a loaded machine's CLI calls take seconds of the 10
        assert made.startswith("silence #1 (service=api kind=disk_full) until "), made
        listed = json.loads(home.cli("silences", "--all", "--json").stdout)
        assert [s["matchers"] for s in listed] == ["service=api kind=disk_full"]
        (inc,) = wait_for(lambda: incidents(home), 20, "the incident (recorded)")
        wait_for(lambda: show(home, inc["id"])["state"] == "muted", 20, "it to be silenced")
        shown = show(home, inc["id"])
        assert shown["details"]["silenced"]["silence"] == 1
        time.sleep(1.0)
        assert not timeline(home, inc["id"], "asked_human")  # nobody asked
        wait_for(lambda: not json.loads(home.cli("silences", "--json").stdout), 30, "expiry")
        write(log, FULL[1])  # after the expiry: asked
        wait_for(lambda: timeline(home, inc["id"], "asked_human"), 30, "a question")
    assert incidents(home)[0]["count"] == 2
    audited = db_rows(home, "select action, data from audit_log where action = 'human.silence'")
    assert len(audited) == 1 and "service=api" in audited[0][1]
