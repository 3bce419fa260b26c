"""The local Docker engine reached as a remote one over SSH (``DOCKER_HOST=ssh://root@ADDRESS``).

The engine's side is the test host (tests/helpers/hosts.py: Debian's OpenSSH server in a
container on a bridge network of its own) with the engine's socket and the static docker CLI
mounted, so ``docker system dial-stdio`` run there over SSH reaches the engine, as on a machine
that runs one. Guard's side is docker-py's own (paramiko), set up the way docs/SANDBOX.md tells
a person to: a key, the engine host's keys pinned in ``known_hosts``, both under ``$HOME/.ssh``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from guard.hosts.ssh import asyncssh
from tests.helpers.hosts import HostBox

SOCKET = "/var/run/docker.sock"


@dataclass(frozen=True)
class SshEngine:
    box: HostBox
    home: Path  # the HOME whose .ssh holds the key and known_hosts

    @property
    def url(self) -> str:
        return f"ssh://root@{self.box.address}"


def ssh_environ(engine: SshEngine) -> dict[str, str]:
    """What a Guard reaching ``engine`` over SSH has in its environment."""
    return {"DOCKER_HOST": engine.url, "HOME": str(engine.home)}


@contextmanager
def ssh_engine(client: Any, home: Path, prefix: str) -> Iterator[SshEngine]:
    """The engine behind an SSH server; the client's key and known_hosts in ``home``/.ssh."""
    cli = shutil.which("docker")
    assert cli, "the docker CLI is needed on the engine's side (docker system dial-stdio)"
    mounts = {
        SOCKET: {"bind": SOCKET, "mode": "rw"},
        cli: {"bind": "/usr/bin/docker", "mode": "ro"},
    }
    box = HostBox(client, prefix, volumes=mounts)
    try:
        key = asyncssh.generate_private_key("ssh-ed25519")
        ssh = home / ".ssh"
        ssh.mkdir(mode=0o700, parents=True, exist_ok=True)
        (ssh / "id_ed25519").write_bytes(key.export_private_key())
        (ssh / "id_ed25519").chmod(0o600)
        public = key.export_public_key().decode().strip()
        box.sh(
            "install -d -m 700 /root/.ssh && "
            f"printf '%s\\n' '{public}' > /root/.ssh/authorized_keys && "
            "chmod 600 /root/.ssh/authorized_keys"
        )
        pinned = box.sh("cat /etc/ssh/ssh_host_*_key.pub").splitlines()
        (ssh / "known_hosts").write_text(
            "".join(f"{box.address} {' '.join(line.split()[:2])}\n" for line in pinned if line)
        )
        yield SshEngine(box, home)
    finally:
        box.remove()
