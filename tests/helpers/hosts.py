"""A test host (docs/HOSTS.md): Debian's OpenSSH server, sudo, nginx and systemd in a
debootstrap rootfs (the sandbox builder with another spec, cached by its hash: minutes once,
then seconds), run as a container on a bridge network of its own, and set up the way the docs
tell a person to: Guard's key generated at test time, the host key pinned from `guard host add
--scan`, the host's side installed by running `guard host setup`'s output on it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from guard.hosts.ssh import asyncssh
from guard.sandbox import images
from tests.helpers.images import ensure_spec_image

if TYPE_CHECKING:
    from tests.conftest import GuardHome

SPEC: dict[str, Any] = {
    "suite": "bookworm",
    "mirror": images.toolbox_spec()["mirror"],
    "base_image": "debian:bookworm-slim",
    "user": "0:0",
    "packages": [
        "openssh-server",
        "nginx-light",
        "sudo",
        "systemd",
        "systemd-sysv",
        "python3",
        "procps",
        "curl",
    ],
    "tools": ["sshd", "nginx", "sudo", "systemctl", "journalctl", "python3", "ps"],
}
IMAGE = f"guard-test-host:{images.spec_hash(SPEC)}"


def ensure_host_image(client: Any) -> str:
    """Build the host image unless it is there (debootstrap a few minutes once, then cached)."""
    return ensure_spec_image(client, IMAGE, SPEC)


# systemd cannot be PID 1 on this engine without a writable cgroup mount or --privileged
# (cgroup v1: "Failed to create /init.scope control group: Read-only file system"), so the
# test host runs Debian's init scripts and this systemctl maps a unit onto its script
# (docs/HOSTS.md, "The test host"). Everything else is the real thing: OpenSSH, sudo, nginx.
SYSTEMCTL_SHIM = """#!/bin/sh
[ "$1" = "--no-pager" ] && shift
verb=$1 unit=${2%.service}
case "$unit" in ssh|nginx|hang) ;; *) echo "Unit $2 could not be found." >&2; exit 5;; esac
case "$verb" in restart|start|stop|reload|status) ;; *) exit 2;; esac
exec /etc/init.d/"$unit" "$verb"
"""
HANG_SCRIPT = "#!/bin/sh\nexec sleep 600\n"  # a unit whose every verb hangs
PREPARE = f"""set -e
cat > /usr/bin/systemctl <<'EOF'
{SYSTEMCTL_SHIM}EOF
printf '%s' '{HANG_SCRIPT}' > /etc/init.d/hang
chmod 755 /usr/bin/systemctl /etc/init.d/hang
mkdir -p /run/sshd /var/log/nginx /var/log/app /run/systemd/journal
install -d -g systemd-journal -m 2755 /run/log/journal  # as systemd-tmpfiles would
(/lib/systemd/systemd-journald </dev/null >/dev/null 2>&1 &)
ssh-keygen -A >/dev/null
/etc/init.d/ssh start >/dev/null
/etc/init.d/nginx start >/dev/null
"""


class HostBox:
    """A Debian host in a container on a bridge network of its own, reached at its bridge
    address; ``sh`` runs a command on it as root (the test's hand, never Guard's)."""

    def __init__(
        self, client: Any, prefix: str, network: Any = None, volumes: dict[str, Any] | None = None
    ) -> None:
        self.client = client
        self.own_network = network is None
        self.network = network or client.networks.create(f"{prefix}-net", driver="bridge")
        try:
            self.container = client.containers.run(
                ensure_host_image(client),
                ["/bin/sh", "-c", "exec sleep infinity"],
                name=f"{prefix}-host",
                detach=True,
                init=True,
                network=self.network.name,
                volumes=volumes,
                labels={"guard.test": "1"},
            )
            self.container.reload()
            self.network.reload()
            net = self.container.attrs["NetworkSettings"]["Networks"][self.network.name]
            self.address: str = net["IPAddress"]
            self.gateway: str = net["Gateway"]
            self.sh(PREPARE)
        except Exception:
            self.remove()
            raise

    def sh(self, script: str, *, check: bool = True) -> str:
        code, out = self.container.exec_run(["/bin/sh", "-c", script], user="root")
        text: str = out.decode(errors="replace")
        if check and code != 0:
            raise AssertionError(f"on the test host, exit {code}: {script}\n{text}")
        return text

    def remove(self) -> None:
        with contextlib.suppress(Exception):
            self.container.remove(force=True)
        if self.own_network:
            with contextlib.suppress(Exception):
                self.network.remove()


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
    entry = add_host(home, host, HOST, **extra)
    install(home, host, HOST)
    return entry


def add_host(home: GuardHome, box: HostBox, name: str, **fields: Any) -> dict[str, Any]:
    """hosts.NAME in ``home``'s config (``fields`` override; a key beside hosts: is a setting),
    with a key of its own made now and the host key `guard host add --scan` prints pinned."""
    secrets = home.root / "data" / "secrets"
    secrets.mkdir(parents=True, exist_ok=True)
    key = asyncssh.generate_private_key("ssh-ed25519")
    (secrets / f"{name}_ssh").write_bytes(key.export_private_key())
    (secrets / f"{name}_ssh").chmod(0o600)
    entry: dict[str, Any] = {
        "address": box.address,
        "key": f"{name}_ssh",
        "units": UNITS,
        "paths": PATHS,
        "commands": COMMANDS,
        "from_address": box.gateway,
        "connect_timeout": "3s",
        "command_timeout": "5s",
    }
    settings = {k: v for k, v in fields.items() if k not in entry and k != "jump"}
    entry.update({k: v for k, v in fields.items() if k not in settings})
    config = {**yaml.safe_load(home.config.read_text()), **settings}
    config.setdefault("hosts", {})[name] = entry
    home.config.write_text(yaml.safe_dump(config))
    scanned = home.cli("host", "add", name, "--scan", "--address", box.address)
    pinned = yaml.safe_load(scanned.stdout)["hosts"][name]["host_key"]
    assert pinned.startswith("ssh-ed25519 ") and "compare on the host" in scanned.stderr
    entry["host_key"] = pinned
    home.config.write_text(yaml.safe_dump(config))
    return entry


def install(home: GuardHome, box: HostBox, name: str) -> str:
    """Run `guard host setup NAME`'s script on the host, as a person would; return it."""
    script = home.cli("host", "setup", name).stdout
    box.sh(f"cat > /root/guard-setup.sh <<'SETUP_EOF'\n{script}SETUP_EOF\nsh /root/guard-setup.sh")
    return script
