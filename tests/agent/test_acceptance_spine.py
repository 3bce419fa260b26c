"""The spine's acceptance checks, driven through the ``guard`` CLI as a user would."""

from __future__ import annotations

import json
import os
import random
import sqlite3
import uuid
from pathlib import Path

from tests.conftest import GuardHome


def noisy_line(i: int) -> str:
    """One fault, varying only in timestamp, request id, IP and duration."""
    return (
        f"2026-12-02T{i % 24:02d}:{i % 60:02d}:{(i * 7) % 60:02d}.{i % 1000:03d}Z FATAL "
        f"req={uuid.uuid4()} trace={random.randrange(1 << 32):08x} client "
        f"10.{i % 256}.{(i * 3) % 256}.{i % 200} took {random.randrange(1, 5000)}ms: "
        "sorry, too many clients already\n"
    )


def open_incidents(home: GuardHome) -> list[dict]:
    out = home.cli("incidents", "list", "--state", "open", "--json").stdout
    return json.loads(out)


def setup_log(home: GuardHome) -> Path:
    log = home.root / "api.log"
    log.write_text("")
    rules = [
        {"kind": "db_too_many_connections", "pattern": "too many clients", "severity": "critical"},
        {"kind": "api_error", "pattern": r"\bERROR\b"},
    ]
    home.log_playbook("api", log, rules)
    return log


def test_log_storm_becomes_four_incidents_and_counts_only_grow(home: GuardHome):
    log = setup_log(home)
    home.cli("run", "--once")  # sees the empty file
    with open(log, "a") as f:
        f.writelines(noisy_line(i) for i in range(10_000))
        f.write("ERROR payment provider returned 502\n")
        f.write("ERROR disk /dev/sda1 is full\n")
        f.write("ERROR cache warmup failed\n")
    home.cli("run", "--once")
    incidents = open_incidents(home)
    assert len(incidents) == 4
    big = next(i for i in incidents if i["kind"] == "db_too_many_connections")
    assert big["count"] == 10_000
    for field in (
        "id",
        "state",
        "source",
        "target",
        "kind",
        "severity",
        "count",
        "fingerprint",
        "title",
        "opened_at",
    ):
        assert field in big
    assert big["severity"] == "critical" and big["source"] == "logfile"

    # appending adds to counts; nothing old is re-read
    with open(log, "a") as f:
        f.writelines(noisy_line(i) for i in range(25))
    home.cli("run", "--once")
    home.cli("run", "--once")  # nothing new: counts stay
    by_kind = {i["kind"]: i for i in open_incidents(home) if i["kind"] != "api_error"}
    assert by_kind["db_too_many_connections"]["count"] == 10_025
    assert len(open_incidents(home)) == 4

    # rotation: lines written before and after the rename are all counted once
    with open(log, "a") as f:
        f.writelines(noisy_line(i) for i in range(5))
    os.rename(log, f"{log}.1")
    with open(log, "w") as f:
        f.writelines(noisy_line(i) for i in range(7))
    home.cli("run", "--once")
    big = next(i for i in open_incidents(home) if i["kind"] == "db_too_many_connections")
    assert big["count"] == 10_037

    shown = json.loads(home.cli("incidents", "show", str(big["id"]), "--json").stdout)
    assert shown["timeline"][0]["type"] == "opened"


def test_check_config_names_every_problem(home: GuardHome):
    (home.playbooks / "bad.yaml").write_text(
        "name: bad\nmonitors:\n"
        "  - id: web\n    type: http\n    url: http://127.0.0.1:1/\n    for: many\n"
        "  - id: thing\n    type: telepathy\n"
        "  - id: log\n    type: logfile\n    path: /tmp/x.log\n"
        "    rules:\n      - kind: oops\n        pattern: 'unclosed ['\n"
    )
    proc = home.cli("check-config", check=False)
    assert proc.returncode == 2
    err = proc.stderr
    assert "playbooks/bad.yaml: monitors[0].for: Input should be a valid integer" in err
    assert "playbooks/bad.yaml: monitors[1].type: unknown monitor type 'telepathy'" in err
    assert "playbooks/bad.yaml: monitors[2].rules[0].pattern: invalid regex 'unclosed ['" in err


def test_check_config_passes_on_good_config(home: GuardHome):
    setup_log(home)
    proc = home.cli("check-config")
    assert "config ok: 1 playbook(s), 1 monitor(s)" in proc.stdout


def test_audit_verify_detects_an_altered_row(home: GuardHome):
    log = setup_log(home)
    home.cli("run", "--once")
    log.write_text("ERROR one\nERROR two\n")
    home.cli("run", "--once")
    ok = home.cli("audit", "verify")
    assert "audit chain ok" in ok.stdout
    db = home.root / "data" / "guard.db"
    with sqlite3.connect(db) as conn:
        n = conn.execute("select count(*) from audit_log").fetchone()[0]
        assert n >= 4
        conn.execute("update audit_log set actor='mallory' where seq=3")
    bad = home.cli("audit", "verify", check=False)
    assert bad.returncode == 1
    assert "entry #3" in bad.stderr and "altered" in bad.stderr


def test_audit_verify_detects_deleted_and_reordered_rows(home: GuardHome):
    log = setup_log(home)
    home.cli("run", "--once")
    log.write_text("ERROR one\nERROR two\nERROR three\n")
    home.cli("run", "--once")
    db = home.root / "data" / "guard.db"
    with sqlite3.connect(db) as conn:
        conn.execute("delete from audit_log where seq=2")
    assert "entry #2" in home.cli("audit", "verify", check=False).stderr
    with sqlite3.connect(db) as conn:  # put a row back in the gap, but a different one
        conn.execute("update audit_log set seq=2 where seq=4")
    proc = home.cli("audit", "verify", check=False)
    assert proc.returncode == 1 and "entry #" in proc.stderr


def test_json_logs(home: GuardHome):
    setup_log(home)
    env_home = home.root
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "guard.cli", "run", "--once"],
        cwd=env_home,
        env={**os.environ, "GUARD_CONFIG": str(home.config), "GUARD_LOG_FORMAT": "json"},
        capture_output=True,
        text=True,
        check=True,
    )
    home.root.joinpath("api.log").unlink()
    proc = subprocess.run(
        [sys.executable, "-m", "guard.cli", "run", "--once"],
        cwd=env_home,
        env={**os.environ, "GUARD_CONFIG": str(home.config), "GUARD_LOG_FORMAT": "json"},
        capture_output=True,
        text=True,
        check=True,
    )
    lines = [json.loads(line) for line in proc.stderr.splitlines() if line.strip()]
    assert lines and all({"time", "level", "message"} <= set(x) for x in lines)
    assert any("does not exist" in x["message"] for x in lines)


def test_version_and_help(home: GuardHome):
    assert home.cli("--version").stdout.startswith("guard ")
    helptext = home.cli("--help").stdout
    for verb in ("run", "check-config", "incidents", "audit"):
        assert verb in helptext
