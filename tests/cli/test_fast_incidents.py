"""``guard incidents list``'s fast path answers as the ORM path does, to the byte (issue 17).

A store is built with the real ORM (several states, titles with unicode, markup, control
characters and a configured secret written in clear past the scrubber, templates and
proposals); each listing is run with the fast path and with ``GUARD_NO_FAST_READ=1`` and the
outputs compared, on SQLite and on a real PostgreSQL. The settings resolver is compared with
``load_settings`` on a matrix of files and environments.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import insert
from typer.testing import CliRunner

from guard.cli import app
from guard.config import Settings, load_settings
from guard.config import fast as fastconfig
from guard.domain.exceptions import ConfigError
from guard.store import fastread, scrub
from guard.store.db import open_database
from guard.store.models import Incident, IncidentState, LogTemplate
from tests.conftest import GuardHome

TOKEN = "tg-bot-token-0123456789abcdef"  # a configured secret, stored in clear by an old Guard
LISTINGS = [
    [],
    ["--json"],
    ["--state", "open"],
    ["--state", "open", "--state", "escalated", "--json"],
    ["--state", "muted"],
    ["--limit", "3"],
    ["--limit", "0"],
    ["--json", "--state", "resolved", "--limit", "2"],
]
TITLES = [
    "http status on svc-1",
    "[bold red]markup[/] is data, not style",
    "ünïcödé ✓ 日本語 — ok",
    "escape \x1b[31mred\x1b[0m and bidi \u202eevil",
    "two\nlines",
    f"leaked {TOKEN} in a log line",
    "password=hunter2hunter2 in a URL",
]


def build(url: str) -> None:
    """Incidents in every state, inserted past the scrubber (as an older Guard stored them)."""
    db = open_database(url)
    now = datetime(2026, 12, 4, 8, 30, 1, 123456, tzinfo=UTC)
    with db.session() as session:
        template = LogTemplate(template="request <*> failed after <*>ms")
        session.add(template)
        session.flush()
        template_id = template.id
    rows: list[dict[str, Any]] = []
    states = list(IncidentState)
    for i in range(1, 31):
        opened = now - timedelta(hours=i, microseconds=0 if i % 3 else 123456)
        state = states[i % len(states)]
        details: dict[str, Any] = {}
        if i % 4 == 0:
            details = {"template_id": template_id, "lines": ["a", "b"]}
        if i % 5 == 0:
            details["proposal"] = {"fix": "docker.restart api", "reason": "r", "confidence": 0.9}
        rows.append(
            {
                "id": i,
                "fingerprint": f"{i:016x}",
                "check_key": f"mon-{i}|t",
                "monitor_id": f"mon-{i % 3}",
                "source": "http",
                "target": f"http://svc-{i}/healthz",
                "kind": "http_status",
                "severity": ["info", "warning", "critical"][i % 3],
                "title": TITLES[i % len(TITLES)],
                "message": f"answered 503 ({TOKEN if i == 7 else 'expected 200'})",
                "state": state,
                "count": i * 7,
                "reopen_count": i % 2,
                "flapping": i % 6 == 0,
                "opened_at": opened,
                "first_seen": opened,
                "last_seen": opened + timedelta(minutes=i),
                "resolved_at": opened + timedelta(hours=1) if state == "resolved" else None,
                "details": details,
            }
        )
    with db.engine.begin() as conn:
        conn.execute(insert(Incident), rows)
    db.dispose()


def listing(args: list[str], config: Path, *, fast: bool, monkeypatch: pytest.MonkeyPatch) -> str:
    if fast:
        monkeypatch.delenv("GUARD_NO_FAST_READ", raising=False)
    else:
        monkeypatch.setenv("GUARD_NO_FAST_READ", "1")
    result = CliRunner().invoke(app, ["incidents", "list", "--config", str(config), *args])
    assert result.exit_code == 0, result.output
    return result.output


def compare(home: GuardHome, url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = load_settings(home.config)
    resolved = fastconfig.resolve(home.config)
    assert resolved is not None and resolved.database_url == settings.database_url
    found = fastread.list_incidents(url, [], 200, lambda rows: [])
    assert found is not None and len(found.rows) == 30  # the fast path does answer
    for args in LISTINGS:
        fast = listing(args, home.config, fast=True, monkeypatch=monkeypatch)
        orm = listing(args, home.config, fast=False, monkeypatch=monkeypatch)
        assert fast == orm, args
    shown = listing(["--json"], home.config, fast=True, monkeypatch=monkeypatch)
    assert TOKEN not in shown and "[REDACTED:guard-secret]" in shown
    assert "\\u00fcn\\u00efc\\u00f6d\\u00e9" in shown and "[bold red]markup[/]" in shown


@pytest.mark.unit
def test_sqlite_fast_path_matches_the_orm(home: GuardHome, monkeypatch: pytest.MonkeyPatch) -> None:
    home.write_config({"telegram": {"bot_token": TOKEN, "chat_id": 1}})
    url = load_settings(home.config).database_url
    build(url)
    compare(home, url, monkeypatch)


def test_postgres_fast_path_matches_the_orm(
    home: GuardHome, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.fakes.postgres import fresh_database

    url = fresh_database(postgres_url)
    home.write_config({"database_url": url, "telegram": {"bot_token": TOKEN, "chat_id": 1}})
    build(url)
    compare(home, url, monkeypatch)


@pytest.mark.unit
def test_falls_back_where_it_cannot_answer(home: GuardHome, tmp_path: Path) -> None:
    def ids(rows: Any) -> list[int]:
        return []

    missing = f"sqlite:///{tmp_path / 'nothing' / 'guard.db'}"
    assert fastread.list_incidents(missing, [], 10, ids) is None  # no store yet
    assert not (tmp_path / "nothing" / "guard.db").exists()  # and none made
    assert fastread.list_incidents("mysql://x/y", [], 10, ids) is None
    assert fastread.list_incidents("sqlite://", [], 10, ids) is None
    url = load_settings(home.config).database_url
    build(url)
    assert fastread.list_incidents(url, [], 10, ids) is not None
    import sqlite3

    path = url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:  # an older Guard's store: not scrubbed yet
        conn.execute("DELETE FROM monitor_state WHERE key = ?", (fastread.SCRUB_MARK,))
    assert fastread.list_incidents(url, [], 10, ids) is None
    with sqlite3.connect(path) as conn:  # a state this Guard does not know
        conn.execute(
            "INSERT INTO monitor_state VALUES (?, '{\"ruleset\": 1}', '2026-01-01')",
            (fastread.SCRUB_MARK,),
        )
        conn.execute("UPDATE incident SET state = 'weird' WHERE id = 30")
    assert fastread.list_incidents(url, [], 10, ids) is None
    assert fastread.list_incidents(url, ["open"], 10, ids) is not None


@pytest.mark.unit
def test_constants_match_the_full_modules() -> None:
    assert fastread.RULESET == scrub.RULESET
    assert set(Settings.model_fields) == fastconfig.FIELDS | fastconfig.SECTIONS
    from pydantic import BaseModel

    sections = {
        name
        for name, field in Settings.model_fields.items()
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)
    }
    assert sections == fastconfig.SECTIONS
    for section, key in fastconfig.SECRETS:
        assert key in type(getattr(Settings(), section)).model_fields


def test_list_imports_no_orm(home: GuardHome) -> None:
    build(load_settings(home.config).database_url)
    code = (
        "import sys, runpy\n"
        f"sys.argv = ['guard', 'incidents', 'list', '--config', {str(home.config)!r}]\n"
        "try:\n"
        "    runpy.run_module('guard.cli', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ['sqlmodel', 'sqlalchemy', 'pydantic_settings', 'docker', 'lancedb', 'loguru']\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert proc.stdout.splitlines()[-1] == "[]", proc.stdout
    assert "http status on svc-1" in proc.stdout


# -- the resolver against load_settings -----------------------------------------------------

SECRETS = {
    "telegram": {"bot_token": "123456:telegram-token", "chat_id": 5},
    "slack": {"bot_token": "xoxb-slack-8", "app_token": "xapp-slack-9", "channel": "C1"},
    "railway": {"token": "railway-token-1", "project_token": "railway-project-2"},
    "llm": {
        "provider": "openai",
        "model": "m",
        "api_key": "sk-llm-key-3",
        "fallback": [{"provider": "anthropic", "model": "c", "api_key": "sk-ant-key-4"}],
    },
    "audit": {"key": "an-audit-key-of-16+chars"},
    "skills": {"git_token": "ghp_gittoken5"},
    "intake": [
        {"id": "am", "type": "alertmanager", "token": "hook-token-6-of-16+chars"},
        {
            "id": "up",
            "type": "grafana",
            "hmac_secret": "hook-hmac-7-of-16+chars",
            "hmac_header": "X-Sig",
        },
    ],
}
REDACT = {
    "redact": {
        "extra_patterns": ["acme_[a-z]{8}", {"pattern": "corp-(\\d{6})", "kind": "corp-id"}],
        "allow": ["EXAMPLE"],
    }
}
FILES: dict[str, dict[str, Any] | None] = {
    "no file": None,
    "empty": {},
    "data_dir": {"data_dir": "DATA"},
    "database_url": {"database_url": "sqlite:///elsewhere/g.db", "data_dir": "DATA"},
    "empty url": {"database_url": "", "log_level": "DEBUG"},
    "secrets": {**SECRETS, "data_dir": "DATA"},
    "redact": {**REDACT, "sandbox": {"backend": "local"}},
}
ENVS: dict[str, dict[str, str]] = {
    "none": {},
    "data dir": {"GUARD_DATA_DIR": "ENVDATA"},
    "url any case": {
        "guard_Database_URL": "postgresql+psycopg://u:p%40ss@db:5433/g?sslmode=disable"
    },
    "empty url": {"GUARD_DATABASE_URL": ""},
    "railway volume": {"RAILWAY_VOLUME_MOUNT_PATH": "/vol"},
    "secrets": {
        "GUARD_TELEGRAM__BOT_TOKEN": "env-telegram-token",
        "GUARD_LLM__API_KEY": "env-llm",
        "GUARD_SLACK__SIGNING_SECRET": "env-slack-signing",
    },
    "unrelated": {"GUARD_LOG_LEVEL": "DEBUG", "GUARD_SANDBOX__MEMORY": "512m"},
}


def _fresh_env(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    import os

    for var in list(os.environ):
        if var.lower().startswith("guard_") or var.startswith("RAILWAY_"):
            monkeypatch.delenv(var)
    for k, v in env.items():
        monkeypatch.setenv(k, v)


@pytest.mark.unit
@pytest.mark.parametrize("env_name", list(ENVS))
@pytest.mark.parametrize("file_name", list(FILES))
@pytest.mark.parametrize("how", ["--config", "GUARD_CONFIG", "./guard.yaml"])
def test_resolver_agrees_with_load_settings(
    file_name: str, env_name: str, how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _fresh_env(monkeypatch, ENVS[env_name])
    content = FILES[file_name]
    explicit: str | None = None
    if content is not None:
        path = tmp_path / ("guard.yaml" if how == "./guard.yaml" else "custom.yaml")
        path.write_text(yaml.safe_dump(content) if content else "")
        if how == "--config":
            explicit = str(path)
        elif how == "GUARD_CONFIG":
            monkeypatch.setenv("GUARD_CONFIG", str(path))
    settings = load_settings(explicit)
    resolved = fastconfig.resolve(explicit)
    assert resolved is not None
    assert resolved.database_url == settings.database_url
    assert set(resolved.secrets) == set(settings.secret_values())
    assert list(resolved.extra_patterns) == [
        (p.pattern, p.kind) for p in settings.redact.extra_patterns
    ]
    assert list(resolved.allow) == settings.redact.allow
    probe = "acme_abcdefgh corp-123456 EXAMPLE " + " ".join(settings.secret_values())
    from guard.redact import configure

    assert resolved.policy().redact(probe) == configure(settings).redact(probe)


UNSURE: dict[str, tuple[dict[str, Any] | None, dict[str, str]]] = {
    "section as JSON": ({}, {"GUARD_TELEGRAM": '{"bot_token": "abcdef"}'}),
    "redact from env": ({}, {"GUARD_REDACT__ALLOW": '["x"]'}),
    "fallback from env": ({}, {"GUARD_LLM__FALLBACK": "[]"}),
    "intake from env": ({}, {"GUARD_INTAKE": "[]"}),
    "unknown key": ({"colour": "blue"}, {}),
    "short audit key": ({"audit": {"key": "short"}}, {}),
    "bad pattern": ({"redact": {"extra_patterns": ["("]}}, {}),
    "pattern matches nothing": ({"redact": {"extra_patterns": ["x*"]}}, {}),
    "numeric secret": ({"railway": {"token": 12345678}}, {}),
    "url not a string": ({"database_url": 5}, {}),
    "not a mapping": ({"telegram": "x"}, {}),
    "missing file": (None, {"GUARD_CONFIG": "/nonexistent/guard.yaml"}),
}


@pytest.mark.unit
@pytest.mark.parametrize("case", list(UNSURE))
def test_resolver_leaves_the_unusual_to_load_settings(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    content, env = UNSURE[case]
    _fresh_env(monkeypatch, env)
    explicit = None
    if content is not None:
        path = tmp_path / "g.yaml"
        path.write_text(yaml.safe_dump(content))
        explicit = str(path)
    assert fastconfig.resolve(explicit) is None
    if case in ("section as JSON", "redact from env", "fallback from env", "intake from env"):
        load_settings(explicit)  # valid, merely beyond the resolver
    else:
        with pytest.raises(ConfigError):
            load_settings(explicit)


# -- before Typer: guard.cli.fastlist ---------------------------------------------------------


def test_before_typer_matches_the_orm_as_a_user_runs_it(
    home: GuardHome, monkeypatch: pytest.MonkeyPatch
) -> None:
    home.write_config({"telegram": {"bot_token": TOKEN, "chat_id": 1}})
    build(load_settings(home.config).database_url)
    monkeypatch.setenv("COLUMNS", "90")
    for args in [
        [],
        ["--json"],
        ["--state=open", "-sescalated"],
        ["-s", "muted", "--limit=4", "--json"],
        ["-c", str(home.config), "--limit", "007"],
        ["--state", "bogus"],  # Typer's error, either way
        ["--limit", "many"],
        ["--help"],
    ]:
        monkeypatch.delenv("GUARD_NO_FAST_READ", raising=False)
        fast = home.cli("incidents", "list", *args, check=False)
        monkeypatch.setenv("GUARD_NO_FAST_READ", "1")
        orm = home.cli("incidents", "list", *args, check=False)
        assert (fast.returncode, fast.stdout, fast.stderr) == (
            orm.returncode,
            orm.stdout,
            orm.stderr,
        ), args


@pytest.mark.unit
def test_fastlist_parses_only_what_it_understands() -> None:
    from guard.cli.fastlist import Request, parse

    assert parse([]) == Request()
    assert parse(["--state=open", "-sescalated", "-s", "muted", "--json", "--limit", "5"]) == (
        Request(states=["open", "escalated", "muted"], as_json=True, limit=5)
    )
    assert parse(["-c", "g.yaml", "--config=h.yaml"]) == Request(config="h.yaml")
    for declined in (
        ["--help"],
        ["--state", "bogus"],
        ["--State", "open"],
        ["--limit", "-1"],
        ["--limit", "1e3"],
        ["--config"],
        ["--config="],
        ["-s"],
        ["list"],
        ["--json=yes"],
        ["--"],
        ["-s=open"],
    ):
        assert parse(declined) is None, declined
