"""The host action family: its grammar (``... on web1``; one host implied) and what the
skills need of a host."""

from __future__ import annotations

from pathlib import Path

import pytest

from guard.actions.base import ActionContext, ActionError
from guard.actions.host import host_name, needed
from guard.actions.registry import ActionRegistry
from guard.config import Settings
from guard.hosts import allowlist as commands

pytestmark = pytest.mark.unit


def _settings(tmp_path: Path, *names: str) -> Settings:
    hosts = {n: {"address": "h", "key": "k", "units": ["nginx.service"]} for n in names}
    return Settings(data_dir=tmp_path, hosts=hosts)  # type: ignore[arg-type]


def test_on_names_the_host() -> None:
    registry = ActionRegistry()
    action, args = registry.parse("host.systemctl restart nginx.service on web1")
    assert action.name == "host.systemctl"
    assert args == {"verb": "restart", "unit": "nginx.service", "host": "web1"}
    assert registry.parse("host.df on db")[1] == {"host": "db"}
    assert registry.parse("host.journal nginx.service 50 host=web1")[1]["lines"] == "50"
    assert registry.looks_like_action("host.systemctl restart nginx.service")


def test_one_host_is_implied_and_two_must_be_named(tmp_path: Path) -> None:
    assert host_name({}, ActionContext(_settings(tmp_path, "web1"))) == "web1"
    incident = {"details": {"host": "db"}}
    assert host_name({}, ActionContext(_settings(tmp_path, "web1", "db"), incident)) == "db"
    with pytest.raises(ActionError, match="end the action with 'on NAME' \\(hosts: db, web1\\)"):
        host_name({}, ActionContext(_settings(tmp_path, "web1", "db")))


def test_what_skills_need_of_a_host(tmp_path: Path) -> None:
    settings = _settings(tmp_path, "web1", "db")
    steps = [
        (
            "fix-nginx",
            "host.systemctl",
            {"verb": "restart", "unit": "nginx.service", "host": "web1"},
        ),
        ("fix-db", "host.systemctl", {"verb": "restart", "unit": "pg.service", "host": "db"}),
        ("templated", "host.truncate", {"path": "{{ target }}", "host": "web1"}),
    ]
    assert needed(settings, "web1", steps) == [
        ("fix-nginx", commands.systemctl("restart", "nginx.service"))
    ]
