"""A test host set up the way docs/HOSTS.md tells a person to: Guard's key generated at test
time, the host key pinned from `guard host add --scan`, and the host's side installed by
running `guard host setup`'s output on it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from guard.hosts.ssh import asyncssh
from tests.conftest import GuardHome
from tests.helpers.hosts import HostBox

HOST = "web1"
UNITS = ["nginx.service", "hang.service"]
PATHS = ["/var/log/app/*.log"]
COMMANDS = {
    "env": "/usr/bin/env",
    "flood": "/usr/bin/head -c 100000000 /dev/zero",
    "nap": "/usr/bin/sleep 30",
}


@pytest.fixture
def test_host(docker_client: Any, request: pytest.FixtureRequest) -> Iterator[HostBox]:
    prefix = f"guard-test-{os.getpid()}-{request.node.name[:24]}".lower().replace("_", "-")
    host = HostBox(docker_client, prefix.replace("[", "-").replace("]", ""))
    try:
        yield host
    finally:
        host.remove()


def configure(home: GuardHome, host: HostBox, **extra: Any) -> dict[str, Any]:
    """Write hosts.web1 into ``home``'s config (with ``extra`` settings), pinning the key
    `guard host add --scan` prints, and install `guard host setup`'s script on the host."""
    secrets = home.root / "data" / "secrets"
    secrets.mkdir(parents=True, exist_ok=True)
    key = asyncssh.generate_private_key("ssh-ed25519")
    (secrets / "web1_ssh").write_bytes(key.export_private_key())
    (secrets / "web1_ssh").chmod(0o600)
    entry = {
        "address": host.address,
        "key": "web1_ssh",
        "units": UNITS,
        "paths": PATHS,
        "commands": COMMANDS,
        "from_address": host.gateway,
        "connect_timeout": "3s",
        "command_timeout": "5s",
    }
    base = yaml.safe_load(home.config.read_text())
    home.config.write_text(yaml.safe_dump({**base, **extra, "hosts": {HOST: entry}}))
    scanned = home.cli("host", "add", HOST, "--scan")
    pinned = yaml.safe_load(scanned.stdout)["hosts"][HOST]["host_key"]
    assert pinned.startswith("ssh-ed25519 ") and "compare on the host" in scanned.stderr
    entry["host_key"] = pinned
    home.config.write_text(yaml.safe_dump({**base, **extra, "hosts": {HOST: entry}}))
    script = home.cli("host", "setup", HOST).stdout
    host.sh(f"cat > /root/guard-setup.sh <<'SETUP_EOF'\n{script}SETUP_EOF\nsh /root/guard-setup.sh")
    return entry
