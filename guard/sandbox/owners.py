"""Who made a sandbox: the labels every backend stamps on what it starts, and whether that
Guard may still be alive (so what it left is not yet an orphan). No engine SDK is imported here:
the ``docker`` and ``kubernetes`` backends both read it.
"""

from __future__ import annotations

import os
import secrets as _secrets
import socket
from collections.abc import Mapping

LABEL = "guard.sandbox"
LABEL_OWNER = "guard.owner"
LABEL_INCIDENT = "guard.incident"
LABEL_HOST = "guard.host"
LABEL_PID = "guard.pid"
LABEL_PID_STARTED = "guard.pid_started"  # when that pid started: a reused pid is another process
INSTANCE_ID = f"{socket.gethostname()}-{os.getpid()}-{_secrets.token_hex(4)}"
"""This Guard process; stamped on every container it starts."""


def process_started(pid: int) -> str:
    """When process ``pid`` started (clock ticks since boot, from /proc), or "" if unknown."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def owner_alive(tags: Mapping[str, str]) -> bool:
    """Whether the Guard that made a container may still be running (so it is not an orphan).

    Guard runs as PID 1 in its container, and a restarted container keeps its hostname: the
    pid alone would say "alive" for ever. A pid whose start time differs is another process.
    """
    pid = tags.get(LABEL_PID, "")
    if tags.get(LABEL_HOST) != socket.gethostname() or not pid.isdigit():
        return True  # another host's Guard: not ours to judge
    if not _pid_alive(int(pid)):
        return False
    started = tags.get(LABEL_PID_STARTED, "")
    return not started or started == process_started(int(pid))
