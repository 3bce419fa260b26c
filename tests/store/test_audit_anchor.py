"""The audit chain against anchors kept outside the database, and keyed (HMAC) entries.

An attacker here can write the database (delete rows, edit one and recompute every hash after
it) but can neither read ``audit.key`` nor rewrite history already posted elsewhere.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from pathlib import Path

from guard.store.audit import ANCHORS, GENESIS, entry_hash
from tests.agent.test_acceptance_spine import setup_log
from tests.conftest import GuardHome

KEY = "correct-horse-battery-staple-0123"


def _chain(home: GuardHome, runs: int = 3) -> Path:
    log = setup_log(home)
    for i in range(runs):
        log.write_text(log.read_text() + f"ERROR failure {i}\n")
        home.cli("run", "--once")
    return home.root / "data" / "guard.db"


def _recompute(db: Path, *, edit_seq: int, key: bytes | None) -> None:
    """Edit one row, then recompute every hash from it on (what a forger would do)."""
    with sqlite3.connect(db) as conn:
        conn.execute("update audit_log set actor = 'mallory' where seq = ?", (edit_seq,))
        rows = conn.execute(
            "select seq, at, actor, action, subject, data from audit_log order by seq"
        ).fetchall()
        prev = GENESIS
        for seq, at, actor, action, subject, data in rows:
            digest = entry_hash(prev, seq, _at(at), actor, action, subject, json.loads(data), key)
            conn.execute(
                "update audit_log set prev_hash = ?, hash = ? where seq = ?", (prev, digest, seq)
            )
            prev = digest


def _at(text: str) -> datetime:
    from datetime import UTC

    value = datetime.fromisoformat(text)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def test_deleting_the_newest_rows_after_an_anchor_fails_and_names_the_anchor(home: GuardHome):
    db = _chain(home)
    anchored = home.cli("audit", "anchor")
    assert "anchored head #" in anchored.stdout
    anchors = (home.root / "data" / ANCHORS).read_text().splitlines()
    assert len(anchors) == 1 and set(json.loads(anchors[0])) == {"seq", "hash", "at", "n"}
    ok = home.cli("audit", "verify")
    assert "audit chain ok" in ok.stdout and "1 anchor(s) hold" in ok.stdout
    with sqlite3.connect(db) as conn:
        (n,) = conn.execute("select max(seq) from audit_log").fetchone()
        conn.execute("delete from audit_log where seq > ?", (n - 3,))
    bad = home.cli("audit", "verify", check=False)
    assert bad.returncode == 1
    assert f"anchor 1 of {ANCHORS}" in bad.stderr and "deleted" in bad.stderr
    print(bad.stderr)


def test_a_rewritten_chain_no_longer_matches_its_anchor(home: GuardHome):
    db = _chain(home)
    home.cli("audit", "anchor")
    _recompute(db, edit_seq=2, key=None)  # a consistent chain, but not the anchored one
    bad = home.cli("audit", "verify", check=False)
    assert bad.returncode == 1 and "no longer has" in bad.stderr and "anchor 1" in bad.stderr


def test_the_head_from_a_daily_report_is_an_anchor(home: GuardHome):
    db = _chain(home)
    report = home.cli("report", "daily", "--print").stdout
    head = report.split("head ")[-1].split()[0]
    seq = int(head.split(":")[0])
    assert home.cli("audit", "verify", "--head", head).returncode == 0
    with sqlite3.connect(db) as conn:
        conn.execute("delete from audit_log where seq >= ?", (seq - 1,))
    bad = home.cli("audit", "verify", "--head", head, check=False)
    assert bad.returncode == 1 and "--head" in bad.stderr


def test_with_a_key_a_recomputed_chain_fails(home: GuardHome):
    db = _chain(home, runs=1)  # unkeyed entries from before the key was set
    home.write_config({**_config(home), "audit": {"key": KEY}})
    log = home.root / "api.log"
    log.write_text(log.read_text() + "ERROR after the key\n")
    home.cli("run", "--once")
    ok = home.cli("audit", "verify")  # the old unkeyed entries still verify
    assert "audit chain ok" in ok.stdout and "(keyed)" in ok.stdout
    with sqlite3.connect(db) as conn:
        keyed = conn.execute("select count(*) from audit_log where hash like 'hmac:%'")
        assert keyed.fetchone()[0] >= 1
    _recompute(db, edit_seq=2, key=None)  # recomputed without the key
    bad = home.cli("audit", "verify", check=False)
    assert bad.returncode == 1, bad.stdout
    _recompute(db, edit_seq=2, key=b"a guess at the key, not the key")
    bad = home.cli("audit", "verify", check=False)
    assert bad.returncode == 1 and "altered or was recomputed without audit.key" in bad.stderr
    _recompute(db, edit_seq=2, key=KEY.encode())  # only the key holder can
    assert home.cli("audit", "verify").returncode == 0
    # and a keyed chain cannot be checked (or silently accepted) without the key
    home.write_config(_config(home))
    bad = home.cli("audit", "verify", check=False)
    assert bad.returncode == 1 and "audit.key is not set" in bad.stderr


def _config(home: GuardHome) -> dict[str, str]:
    return {
        "data_dir": str(home.root / "data"),
        "playbooks_dir": str(home.playbooks),
        "skills_dir": str(home.root / "skills"),
    }


def test_guard_run_anchors_every_anchor_every(home: GuardHome):
    from tests.helpers.agent import running_guard, wait_for

    setup_log(home)
    home.write_config(
        {
            **_config(home),
            "http_host": "127.0.0.1",
            "http_port": 0,
            "agent": {"enabled": False},
            "audit": {"anchor_every": "1s"},
        }
    )
    path = home.root / "data" / ANCHORS
    with running_guard(home):
        wait_for(
            lambda: path.is_file() and len(path.read_text().splitlines()) >= 2, 30, "two anchors"
        )
    ok = home.cli("audit", "verify")
    assert "audit chain ok" in ok.stdout and "anchor(s) hold" in ok.stdout


def test_check_config_names_bad_redact_and_audit_settings(home: GuardHome):
    home.write_config(
        {
            **_config(home),
            "redact": {"extra_patterns": ["([unclosed"], "allow": ["("]},
            "audit": {"key": "short", "anchor_every": "soon"},
        }
    )
    proc = home.cli("check-config", check=False)
    assert proc.returncode == 2
    for field in ("redact.extra_patterns", "redact.allow", "audit.key", "audit.anchor_every"):
        assert field in proc.stderr, (field, proc.stderr)
