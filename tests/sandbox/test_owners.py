"""Whether the Guard that made a sandbox may be alive: its host, its pid, and when that pid
started (a restarted container's Guard is pid 1 again, but another process)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from guard.sandbox import owners

pytestmark = pytest.mark.unit


def labels(pid: int, started: str | None = None, host: str | None = None) -> dict[str, str]:
    return {
        owners.LABEL_HOST: host or socket.gethostname(),
        owners.LABEL_PID: str(pid),
        owners.LABEL_PID_STARTED: owners.process_started(pid) if started is None else started,
    }


def test_this_process_is_alive_a_finished_one_or_a_reused_pid_is_not() -> None:
    assert owners.owner_alive(labels(os.getpid()))
    top = int(Path("/proc/sys/kernel/pid_max").read_text()) - 1
    # a pid no process has now (after a long uptime pids wrap, so the last one may be taken)
    dead = next(p for p in range(top, 1, -1) if not Path(f"/proc/{p}").exists())
    assert not owners.owner_alive(labels(dead, started="1"))
    assert not owners.owner_alive(labels(os.getpid(), started="1"))  # same pid, another start
    assert owners.owner_alive(labels(dead, host="another-replica"))  # not ours to judge
    assert owners.INSTANCE_ID.startswith(f"{socket.gethostname()}-{os.getpid()}-")
