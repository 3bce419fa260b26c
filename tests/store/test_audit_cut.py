"""A retention cut counts only when Guard wrote it, and the anchor file cannot lose lines unseen.

The attacker writes the data volume (the database and ``audit-anchors.jsonl``) but never reads
``audit.key`` and cannot rewrite a head already posted to the chat (``--head``).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from guard.domain.records import utcnow
from guard.store import audit
from guard.store.audit import ANCHORS, entry_hash
from guard.store.retention import prune
from tests.conftest import GuardHome
from tests.store.test_audit_anchor import KEY, _chain


@pytest.fixture(params=[None, KEY], ids=["unkeyed", "keyed"])
def key(request: pytest.FixtureRequest, home: GuardHome) -> str | None:
    if request.param:
        home.write_config({"audit": {"key": request.param}})
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def built() -> dict[str | None, Path]:
    """Data folders holding an anchored chain, by audit key, built once in this module."""
    return {}


@pytest.fixture
def anchored(home: GuardHome, built: dict[str | None, Path]) -> Callable[[], Path]:
    """A chain of a few runs, anchored twice (as ``guard run`` does hourly), put in ``home``.

    The CLI builds it once per audit key (eight ``guard`` runs); each test forges or prunes
    its own copy.
    """

    def put() -> Path:
        key = home.settings().audit.key
        secret = key.get_secret_value() if key is not None else None
        if secret not in built:
            origin = GuardHome(Path(tempfile.mkdtemp(dir=home.root.parent, prefix="chain-")))
            if secret:
                origin.write_config({"audit": {"key": secret}})
            _chain(origin)
            origin.cli("audit", "anchor")
            log = origin.root / "api.log"
            log.write_text(log.read_text() + "ERROR one more\n")
            origin.cli("run", "--once")
            origin.cli("audit", "anchor")
            assert origin.cli("audit", "verify").returncode == 0
            built[secret] = origin.root / "data"
        shutil.copytree(built[secret], home.root / "data", dirs_exist_ok=True)
        return home.root / "data" / "guard.db"

    return put


def _report_head(home: GuardHome) -> str:
    report = home.cli("report", "daily", "--print").stdout
    return report.split("head ")[-1].split()[0]


def _forge_cut(home: GuardHome, db: Path, upto: int | None = None) -> int:
    """Delete entries #1..``upto`` (None: all of them) and add the cut line retention would."""
    with sqlite3.connect(db) as conn:
        (top,) = conn.execute("select max(seq) from audit_log").fetchone()
        upto = top if upto is None else upto
        (digest,) = conn.execute("select hash from audit_log where seq = ?", (upto,)).fetchone()
        conn.execute("delete from audit_log where seq <= ?", (upto,))
    path = home.root / "data" / ANCHORS
    n = len(path.read_text().splitlines()) + 1
    row = {"seq": upto, "hash": digest, "at": "2026-12-04T00:00:00+00:00", "cut": True, "n": n}
    path.write_text(path.read_text() + json.dumps(row) + "\n")
    return int(upto)


@pytest.mark.parametrize("with_head", [False, True], ids=["alone", "with-head"])
def test_a_forged_cut_of_the_oldest_entries_fails(
    home: GuardHome, anchored: Callable[[], Path], key: str | None, with_head: bool
) -> None:
    db = anchored()
    head = ["--head", _report_head(home)] if with_head else []
    assert home.cli("audit", "verify", *head).returncode == 0
    _forge_cut(home, db, upto=5)
    bad = home.cli("audit", "verify", *head, check=False)
    assert bad.returncode == 1, bad.stdout
    assert "no entry left in the chain records that cut" in bad.stderr
    assert "cut 3 of audit-anchors.jsonl" in bad.stderr
    print(bad.stderr)


@pytest.mark.parametrize("with_head", [False, True], ids=["alone", "with-head"])
def test_an_emptied_log_with_a_forged_cut_fails(
    home: GuardHome, anchored: Callable[[], Path], key: str | None, with_head: bool
) -> None:
    db = anchored()
    head = ["--head", _report_head(home)] if with_head else []
    _forge_cut(home, db)  # everything deleted, the cut names the old head
    bad = home.cli("audit", "verify", *head, check=False)
    assert bad.returncode == 1, bad.stdout
    assert "no anchor written before it covers an entry after" in bad.stderr
    print(bad.stderr)


def test_with_the_key_a_forged_record_of_the_cut_fails(
    home: GuardHome, anchored: Callable[[], Path]
) -> None:
    """Without the key the forger can only append an unkeyed ``audit.cut`` entry."""
    home.write_config({"audit": {"key": KEY}})
    db = anchored()
    upto = _forge_cut(home, db, upto=5)
    with sqlite3.connect(db) as conn:
        seq, digest = conn.execute("select seq, hash from audit_log order by seq desc").fetchone()
        cut_hash = json.loads((home.root / "data" / ANCHORS).read_text().splitlines()[-1])["hash"]
        at = utcnow()
        data = {"seq": upto, "hash": cut_hash, "file": ANCHORS, "n": 3}
        forged = entry_hash(digest, seq + 1, at, "guard", "audit.cut", "audit", data)
        conn.execute(
            "insert into audit_log (seq, at, actor, action, subject, data, prev_hash, hash) "
            "values (?, ?, 'guard', 'audit.cut', 'audit', ?, ?, ?)",
            (seq + 1, at.isoformat(), json.dumps(data), digest, forged),
        )
    bad = home.cli("audit", "verify", check=False)
    assert bad.returncode == 1 and "unkeyed entry after keyed ones" in bad.stderr


def test_a_real_prune_verifies_and_so_do_heads_from_before_and_after_it(
    home: GuardHome, anchored: Callable[[], Path], key: str | None
) -> None:
    anchored()
    before = _report_head(home)
    audit.use_key(key)
    try:
        done = prune(
            home.database(),
            0.5 * 86400,
            home.root / "data" / ANCHORS,
            now=utcnow() + timedelta(days=1),
        )
    finally:
        audit.use_key(None)
    assert done.audit_cut is not None and done.audit_cut >= int(before.split(":")[0]) - 1
    after = _report_head(home)
    ok = home.cli("audit", "verify", "--head", before, "--head", after)
    assert "audit chain ok" in ok.stdout
    report = home.cli("report", "daily", "--print").stdout
    assert "Audit log: 4 entries" in report  # anchored, cut, pruned and the newest kept
    lines = (home.root / "data" / ANCHORS).read_text().splitlines()
    assert [json.loads(x).get("cut", False) for x in lines[-2:]] == [False, True]
    # the anchor written before the cut is what covers it: without it the cut is refused
    (home.root / "data" / ANCHORS).write_text("\n".join(lines[:-2] + lines[-1:]) + "\n")
    bad = home.cli("audit", "verify", check=False)
    assert bad.returncode == 1 and "history shrank or was reordered" in bad.stderr


def test_an_anchor_file_that_lost_lines_fails(
    home: GuardHome, anchored: Callable[[], Path]
) -> None:
    anchored()
    path = home.root / "data" / ANCHORS
    lines = path.read_text().splitlines()
    assert [json.loads(x)["n"] for x in lines] == [1, 2]
    path.write_text(lines[0] + "\n")  # the newest anchor line removed
    bad = home.cli("audit", "verify", check=False)
    assert bad.returncode == 1, bad.stdout
    assert "wrote line 2 of audit-anchors.jsonl but the file has 1" in bad.stderr
    path.write_text(lines[1] + "\n")  # the oldest removed
    bad = home.cli("audit", "verify", check=False)
    assert bad.returncode == 1 and "written as anchor 2" in bad.stderr
    path.unlink()  # the whole file
    bad = home.cli("audit", "verify", check=False)
    assert bad.returncode == 1 and "the file has 0" in bad.stderr


def test_the_report_head_is_taken_as_written(home: GuardHome, anchored: Callable[[], Path]) -> None:
    anchored()
    head = _report_head(home)
    seq, digest = head.split(":", 1)
    for form in (head, f"#{head}", f"head {head}", f"`{head}`"):
        assert home.cli("audit", "verify", "--head", form).returncode == 0
    bad = home.cli("audit", "verify", "--head", f"{int(seq) + 1}:{digest}", check=False)
    assert bad.returncode == 1 and "the chain ends at" in bad.stderr
