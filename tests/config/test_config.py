"""Settings: YAML, environment overrides, secrets, defaults, and errors that name the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from guard.config import load_settings
from guard.domain.exceptions import ConfigError

pytestmark = pytest.mark.unit


def test_yaml_then_env_override_with_nesting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    cfg = tmp_path / "guard.yaml"
    cfg.write_text("telegram:\n  chat_id: 42\n  bot_token: from-yaml\nsandbox:\n  timeout: 2m\n")
    monkeypatch.setenv("GUARD_TELEGRAM__BOT_TOKEN", "123:from-env")
    monkeypatch.setenv("GUARD_SANDBOX__PIDS", "64")
    s = load_settings(cfg)
    assert s.telegram.chat_id == 42
    assert s.telegram.bot_token is not None
    assert s.telegram.bot_token.get_secret_value() == "123:from-env"
    assert "from-env" not in repr(s) and "from-env" not in str(s.telegram)
    assert s.sandbox.timeout == 120.0
    assert s.sandbox.pids == 64


def test_config_path_from_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    cfg = tmp_path / "elsewhere.yaml"
    cfg.write_text("railway:\n  project_id: p-1\n")
    monkeypatch.setenv("GUARD_CONFIG", str(cfg))
    assert load_settings().railway.project_id == "p-1"


def test_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.chdir(tmp_path)
    for var in ("GUARD_CONFIG", "RAILWAY_VOLUME_MOUNT_PATH"):
        monkeypatch.delenv(var, raising=False)
    s = load_settings()
    assert s.data_dir == Path("data")
    assert s.database_url == "sqlite:///data/guard.db"
    assert s.telegram.api_base_url == "https://api.telegram.org"
    assert s.railway.api_url == "https://backboard.railway.com/graphql/v2"
    for key in ("image", "memory", "cpus", "pids", "timeout"):
        assert getattr(s.sandbox, key) is not None
    assert s.llm.provider == "none" and s.llm.api_key is None


def test_railway_volume_is_the_default_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GUARD_CONFIG", raising=False)
    monkeypatch.setenv("RAILWAY_VOLUME_MOUNT_PATH", "/data")
    s = load_settings()
    assert s.data_dir == Path("/data")
    assert s.database_url == "sqlite:////data/guard.db"


def test_postgres_url_is_kept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GUARD_DATABASE_URL", "postgresql+psycopg://guard@db/guard")
    assert load_settings().database_url == "postgresql+psycopg://guard@db/guard"


def test_errors_name_file_and_field(tmp_path: Path):
    cfg = tmp_path / "guard.yaml"
    cfg.write_text("sandbox:\n  timeout: fast\n  pidz: 3\ntelegram:\n  allowed_user_ids: [me]\n")
    with pytest.raises(ConfigError) as exc:
        load_settings(cfg)
    text = "\n".join(exc.value.problems)
    assert f"{cfg}: sandbox.timeout: invalid duration 'fast'" in text
    assert f"{cfg}: sandbox.pidz: unknown field" in text
    assert f"{cfg}: telegram.allowed_user_ids[0]:" in text


def test_missing_config_file_is_an_error(tmp_path: Path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_settings(tmp_path / "nope.yaml")


def test_ha_backend_and_lease_name_are_checked(tmp_path: Path):
    cfg = tmp_path / "guard.yaml"
    cfg.write_text("ha: {backend: kubernetes}\n")
    ha = load_settings(cfg).ha
    assert (ha.backend, ha.lease_name, ha.namespace) == ("kubernetes", "guard-leader", "")
    cfg.write_text("ha: {backend: etcd, lease_name: Guard_Leader, namespace: Ops}\n")
    with pytest.raises(ConfigError) as exc:
        load_settings(cfg)
    text = "\n".join(exc.value.problems)
    for field in ("ha.backend", "ha.lease_name", "ha.namespace"):
        assert f"{cfg}: {field}:" in text
