"""``guard host setup``'s script: restrict and a forced command on the key, guard-exec printed
whole, sudoers checked by visudo before it counts."""

from __future__ import annotations

import pytest

from guard.config.hosts import HostSettings
from guard.hosts import allowlist as commands
from guard.hosts.setup import authorized_keys_line, guard_exec_text, script

pytestmark = pytest.mark.unit

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJb7cUMpUK2GqY0wYd3L2Q8m6F0c3Z0x5tU1o9b0cxyz"


def test_the_key_is_restricted_to_guard_exec_from_one_address() -> None:
    host = HostSettings(address="h", key="k", from_address="172.18.0.1")
    line = authorized_keys_line(host, "web1", KEY)
    assert line == (
        'restrict,from="172.18.0.1",command="/usr/local/bin/guard-exec /etc/guard/allowlist" '
        f"{KEY} guard@web1"
    )


def test_the_script_installs_what_a_person_reviews() -> None:
    host = HostSettings(address="h", key="k", units=["nginx.service"], paths=["/var/log/a/*.log"])
    text = script(host, "web1", KEY, commands.allowlist(host))
    assert text.startswith("#!/bin/sh") and "set -eu" in text
    assert guard_exec_text().strip() in text
    assert "/usr/bin/sudo -n /usr/bin/systemctl --no-pager restart nginx.service" in text
    assert "/usr/bin/truncate -s 0 '{glob:/var/log/a/*.log}'" in text
    assert "visudo -cf /etc/sudoers.d/guard.new\nmv" in text
    assert 'from="GUARD_ADDRESS"' in text and "Replace GUARD_ADDRESS" in text
