"""What Guard sends a host and what the generated allowlist lets through come from one place:
every host action's argv passes guard-exec's matcher against its host's allowlist, and the
sudoers file is exact."""

from __future__ import annotations

import pytest

from guard.config.hosts import HostSettings
from guard.hosts import allowlist as commands
from guard.hosts.guard_exec import allowed

pytestmark = pytest.mark.unit

HOST = HostSettings(
    address="10.0.0.5",
    key="web1_ssh",
    units=["nginx.service", "postgresql@15-main.service"],
    paths=["/var/log/app/*.log"],
    commands={"reload-app": "/usr/local/bin/app-reload --graceful"},
)


def test_every_action_argv_is_on_the_allowlist() -> None:
    lines = commands.allowlist(HOST)
    sent = [
        *(commands.systemctl(v, u) for v in commands.VERBS for u in HOST.units),
        commands.journal("nginx.service", 100),
        commands.journal("postgresql@15-main.service", 20, "-1h"),
        commands.journal("nginx.service", 5, "2026-12-06 10:00:00"),
        commands.follow(None, 10),
        commands.follow("s=abc;i=12;b=def;m=1f;t=5e;x=99"),
        commands.truncate("/var/log/app/api.log"),
        commands.named(HOST, "reload-app"),
        commands.DF,
        commands.FREE,
        commands.PS,
    ]
    for argv in sent:
        assert allowed(lines, argv), argv
    for argv in (
        commands.systemctl("restart", "ssh.service"),
        commands.journal("ssh.service", 10),
        commands.truncate("/etc/shadow"),
        ["/usr/bin/bash", "-c", "id"],
    ):
        assert not allowed(lines, argv), argv


def test_sudoers_is_exact_and_only_for_systemctl() -> None:
    text = commands.sudoers(HOST, commands.allowlist(HOST))
    rules = [line for line in text.splitlines() if not line.startswith("#")]
    assert len(rules) == len(commands.VERBS) * len(HOST.units)
    assert "guard ALL=(root) NOPASSWD: /usr/bin/systemctl --no-pager restart nginx.service" in rules
    assert not any(ch in "".join(rules) for ch in "*?[")


def test_a_playbook_need_beyond_the_config_joins_the_allowlist() -> None:
    extra = commands.systemctl("restart", "redis-server.service")
    lines = commands.allowlist(HOST, [extra, commands.DF])
    assert lines.count(extra) == 1 and lines.count(commands.DF) == 1
