"""Redaction: the fake-secret corpus, ordinary lines left alone, encoded forms of Guard's own
secrets, config (extra patterns, allow-list), and one incident for one fault whatever it leaks."""

from __future__ import annotations

import base64
import os
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import select

from guard import redact as redaction
from guard.config import Settings, load_settings
from guard.domain.exceptions import ConfigError
from guard.domain.records import Observation, Signal
from guard.redact import Policy, Redactor, redact
from guard.store.db import open_database
from guard.store.models import Incident, IncidentTimeline
from tests.helpers.agent import new_incident
from tests.helpers.secret_corpus import ordinary_lines, secrets

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def default_policy() -> Iterator[None]:
    yield
    redaction.configure(Settings())  # other tests in this process see the default policy


@pytest.mark.parametrize("seed", ["a", "b", "c"])
def test_every_fake_secret_in_the_corpus_is_redacted_with_its_kind(seed: str):
    policy = Policy()
    corpus = secrets(seed)
    assert len(corpus) >= 15
    for kind, secret, line in corpus:
        out = policy.redact(line)
        for piece in secret.splitlines():
            assert piece not in out, (kind, out)
        assert f"[REDACTED:{kind}]" in out, (kind, out)
        assert policy.redact(out) == out  # redacting twice changes nothing


def test_references_to_secrets_are_not_secrets():
    policy = Policy()
    for text in (
        'psql "postgres://app:$PGPASSWORD@db/app"',
        "login --password=${DB_PASSWORD}",
        'curl -H "Authorization: Bearer $API_TOKEN"',
        "dsn = 'password=%(pw)s'",
    ):
        assert policy.redact(text) == text


def test_the_name_of_a_variable_in_guards_environment_is_shown_and_its_value_is_not(
    monkeypatch: pytest.MonkeyPatch,
):
    """``probe.postgres secret=PG_GUARD_URL`` names the variable the probe reads: the human who
    approves must see which one. A value that only looks like a name stays hidden."""
    monkeypatch.setenv("PG_GUARD_URL", "postgresql://guard:guard-pw-s3cret@db/postgres")
    policy = Policy()
    shown = "$ probe.postgres secret=PG_GUARD_URL\n$ login password=PG_GUARD_URL"
    assert policy.redact(shown) == shown
    for hidden in ("secret=NOT_IN_THE_ENVIRONMENT", "password=hunter2xyz", "secret=Pg_Guard_Url"):
        assert "[REDACTED" in policy.redact(hidden), hidden
    assert "guard-pw-s3cret" not in policy.redact("PG_GUARD_URL=" + os.environ["PG_GUARD_URL"])


def test_ordinary_lines_are_left_alone():
    lines = ordinary_lines(1200)
    changed = [line for line in lines if Policy().redact(line) != line]
    assert len(changed) <= len(lines) // 100, changed[:5]


def test_guards_own_secrets_are_found_raw_url_encoded_and_in_base64():
    token = "987654:" + "own/Secret+Value=" + "x9" * 8
    policy = Policy(secrets=[token])
    for form in (
        token,
        urllib.parse.quote(token, safe=""),
        urllib.parse.quote_plus(token),
        base64.b64encode(token.encode()).decode(),
        base64.urlsafe_b64encode(token.encode()).decode(),
    ):
        assert "guard-secret" in policy.redact(f"seen: {form} end"), form
    for prefix in (b"u:", b"us:", b"use:"):  # inside longer base64, at every alignment
        blob = base64.b64encode(prefix + token.encode() + b"!").decode()
        assert "[REDACTED:guard-secret]" in policy.redact(f"payload {blob} sent"), prefix


def test_the_sandbox_redactor_names_values_then_applies_the_policy():
    aws = secrets()[0][1]
    r = Redactor({"DB_PASSWORD": "tiger-lily-42"})
    out = r.redact_bytes(f"pw tiger-lily-42 key {aws}\n".encode() + b"\xff")
    assert out == b"pw [REDACTED:DB_PASSWORD] key [REDACTED:aws-access-key]\n\xff"


def test_extra_patterns_and_the_allow_list_come_from_the_config(tmp_path: Path):
    cfg = tmp_path / "guard.yaml"
    cfg.write_text(
        "redact:\n  extra_patterns:\n    - 'acme_[0-9a-f]{24}'\n"
        "    - {pattern: 'internal-id=(\\w{12})', kind: internal-id}\n"
        "  allow:\n    - '^sk_test_'\n"
    )
    redaction.configure(load_settings(cfg))
    assert redact("k=acme_" + "0123456789abcdef01234567") == "k=[REDACTED:custom]"
    assert redact("internal-id=abcdefghijkl!") == "internal-id=[REDACTED:internal-id]!"
    test_key = "sk" + "_test_" + "A1b2C3d4E5f6G7h8I9j0"
    assert redact(f"stripe {test_key}") == f"stripe {test_key}"  # allowed
    live_key = "sk" + "_live_" + "A1b2C3d4E5f6G7h8I9j0"
    assert redact(f"stripe {live_key}") == "stripe [REDACTED:stripe-key]"


@pytest.mark.parametrize(
    ("yaml_text", "problem"),
    [
        ("redact:\n  extra_patterns: ['([a-z']\n", "redact.extra_patterns"),
        ("redact:\n  extra_patterns: ['x*']\n", "matches the empty string"),
        ("redact:\n  extra_patterns: [{pattern: 'x+', kind: 'Bad Kind'}]\n", "lower-case letters"),
        ("redact:\n  allow: ['(unclosed']\n", "redact.allow"),
        ("audit:\n  key: short\n", "audit.key"),
        ("audit:\n  anchor_every: soon\n", "anchor_every"),
    ],
)
def test_check_config_names_a_bad_redact_or_audit_setting(
    tmp_path: Path, yaml_text: str, problem: str
):
    cfg = tmp_path / "guard.yaml"
    cfg.write_text(yaml_text)
    with pytest.raises(ConfigError) as exc:
        load_settings(cfg)
    assert problem in "\n".join(exc.value.problems)


def _leak(token: str) -> Observation:
    return Observation(
        [
            Signal(
                monitor_id="api-log",
                source="logfile",
                target="/var/log/api.log",
                kind="auth_error",
                message=f"ERROR upstream refused Authorization: Bearer {token} (401)",
                details={"line": f"Authorization: Bearer {token}"},
            )
        ],
        monitor_id="api-log",
    )


def test_one_fault_leaking_two_different_tokens_is_one_incident(tmp_path: Path):
    from guard.app import Guard

    settings = Settings(data_dir=tmp_path / "data", playbooks_dir=tmp_path, skills_dir=tmp_path)
    guard = Guard(settings, [], heal=False)
    first, second = secrets("one")[7][1], secrets("two")[7][1]  # two different JWTs
    assert first != second
    events = guard.apply([_leak(first)]) + guard.apply([_leak(second)])
    assert [e.type for e in events] == ["opened"]
    with guard.db.session() as s:
        (inc,) = s.exec(select(Incident)).all()
        timeline = s.exec(select(IncidentTimeline)).all()
    assert inc.count == 2
    assert inc.message == "ERROR upstream refused Authorization: Bearer [REDACTED:jwt] (401)"
    assert inc.details == {"line": "Authorization: Bearer [REDACTED:jwt]"}
    stored = repr([inc.model_dump(), [t.model_dump() for t in timeline]])
    assert first not in stored and second not in stored
    guard.db.dispose()


def test_the_store_scrubs_any_row_and_migrates_rows_stored_in_clear(tmp_path: Path):
    import sqlite3

    db = open_database(f"sqlite:///{tmp_path / 'g.db'}")
    leak = secrets()[8][2]  # a postgres:// URL with a password
    with db.session() as s:  # whatever writes a row, only redacted text is stored
        s.add(
            new_incident(
                fingerprint="f",
                monitor_id="m",
                source="s",
                target="t",
                kind="k",
                severity="error",
                title="t",
                message=leak,
                details={"evidence": [leak]},
            )
        )
    with db.session() as s:
        inc = s.exec(select(Incident)).one()
        assert "[REDACTED:url-password]" in inc.message
        assert "[REDACTED:url-password]" in inc.details["evidence"][0]
    db.dispose()
    # a row written in clear by an older Guard: scrubbed once when the database is next opened
    with sqlite3.connect(tmp_path / "g.db") as conn:
        conn.execute("update incident set message = ?", (leak,))
        conn.execute("delete from monitor_state where key = 'guard:redaction'")
    db = open_database(f"sqlite:///{tmp_path / 'g.db'}")
    db.dispose()
    data = b"".join(p.read_bytes() for p in tmp_path.glob("g.db*"))
    assert secrets()[8][1].encode() not in data  # nor in the WAL or a freed page


def test_check_config_warns_on_an_allow_pattern_that_matches_everything_or_typical_secrets(home):
    home.write_config({"redact": {"allow": [".", "^sk_test_", "^[A-Za-z0-9_]+$"]}})
    proc = home.cli("check-config")
    assert proc.returncode == 0 and "config ok" in proc.stdout  # a warning, not a refusal
    assert "warning: redact.allow[0] '.': matches any text" in proc.stderr
    assert "redact.allow[1]" not in proc.stderr  # a pattern for one known false positive
    assert "warning: redact.allow[2] '^[A-Za-z0-9_]+$': matches typical secrets (" in proc.stderr
    assert "aws-access-key" in proc.stderr
    # and the warning is right: with '.' allowed, a rule-found secret is kept in clear
    redaction.configure(load_settings(home.config))
    key = "AK" + "IA" + "QX7V2KZL4M3N5P6R"
    assert redact(f"id {key}") == f"id {key}"


def test_the_held_out_corpus_is_caught_at_95_percent_per_group_and_redacting_twice_is_a_no_op():
    from collections import Counter

    from guard.redact.keys import KeyLines
    from tests.helpers.secret_corpus_heldout import GROUPS, heldout, pieces

    policy = Policy()
    shapes, caught = Counter[str](), Counter[str]()
    corpus = heldout("unit")
    assert len(corpus) >= 150 and {g for g, *_ in corpus} == set(GROUPS)
    for group, name, secret, lines in corpus:
        keys = KeyLines()
        out = [policy.redact(keys.redact("src", line)) for line in lines]
        shapes[group] += 1
        caught[group] += not any(p in "\n".join(out) for p in pieces(secret))
        assert [policy.redact(o) for o in out] == out, name
        assert all("[REDACTED:[" not in o for o in out), name
    for group in GROUPS:
        assert caught[group] >= 0.95 * shapes[group], (group, caught[group], shapes[group])
