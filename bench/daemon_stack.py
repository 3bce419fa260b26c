"""nginx (error and access logs) and Redis, real daemons from the stack image built offline
(``tests/flows/image.py``: Debian's packages), driven through their faults and labelled by
construction, for ``bench.grouping``'s daemons group.

One container (no network) runs ``bench/daemon_stack_driver.py`` (``bench.daemon_drive``'s
loop), which starts the daemons,
injects each fault many times in a seeded random order and reports, per injection, the lines
each log gained. Labels: an nginx error line is its fault's (each fault logs one message); an
access line is its status (what the fault answered: ``404``, ``502``, ``503``...); a Redis
line is the message of Redis' source it is, from the complete list ``REDIS`` (a line matching
none fails the capture), since one injection (a restart, a BGSAVE) logs several and two
injections share some (``DB saved on disk`` after SAVE and BGSAVE).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable
from typing import Any

from bench.common import REPO

Line = tuple[str, str]  # (raw line, label)
REDIS = [
    "Redis is starting",
    "Redis version=",
    "Configuration loaded",
    "monotonic clock",
    "Running mode=",
    "Server initialized",
    "WARNING Memory overcommit",
    "Ready to accept",
    "User requested shutdown",
    "Removing the pid file",
    "ready to exit",
    "Loading RDB produced",
    "RDB age",
    "RDB memory usage",
    "Done loading RDB",
    "DB loaded from disk",
    "DB saved on disk",
    "Fork CoW",
    "Background saving started",
    "Background saving terminated",
    "CONFIG REWRITE executed",
    "Before turning into a replica",
    "Connecting to MASTER",
    "MASTER <-> REPLICA sync started",
    "Error condition on socket for SYNC",
    "REPLICAOF .* enabled",
    "Discarding previously cached",
    "Setting secondary replication ID",
    "MASTER MODE enabled",
    "Possible SECURITY ATTACK",
    "Saving the final RDB",
    "Timeout connecting to the MASTER",
    "Retrying with SYNC",
]
_STATUS = re.compile(r'" (\d{3}) ')


def label(system: str, fault: str, line: str) -> str:
    """A line's event, by construction (see the module's docstring)."""
    if system == "Redis":
        event = next((e for e in REDIS if re.search(e, line)), None)
        if event is None:
            raise ValueError(f"a Redis line no event of REDIS names: {line}")
        return event
    if system == "nginx access":
        found = _STATUS.search(line)
        return f"status {found.group(1) if found else '?'}"
    return fault


def run_driver(image: str, driver: str, seed: int) -> list[dict[str, Any]]:
    """Run the driver module ``driver`` (``bench.daemon_drive``'s loop) in a container of
    ``image`` with no network; its injections."""
    name = f"guard-bench-daemons-{os.getpid()}"
    subprocess.run(
        [
            *("docker", "run", "-d", "--rm", "--name", name, "--network", "none"),
            *("-v", f"{REPO / 'bench'}:/bench:ro", image, "sleep", "900"),
        ],
        check=True,
        capture_output=True,
    )
    try:
        out = subprocess.run(
            ["docker", "exec", "-w", "/", name, "python3", "-m", driver, str(seed)],
            check=True,
            capture_output=True,
            text=True,
            timeout=600,
        ).stdout
    finally:
        subprocess.run(["docker", "rm", "-f", name], check=False, capture_output=True)
    return [json.loads(row) for row in out.splitlines()]


def labelled(
    rows: list[dict[str, Any]], label: Callable[[str, str, str], str]
) -> dict[str, list[Line]]:
    """Each log's lines with ``label(system, fault, line)``."""
    logs: dict[str, list[Line]] = {}
    for row in rows:
        for system, text in row["logs"].items():
            lines = [(line, label(system, row["fault"], line)) for line in text.splitlines()]
            logs.setdefault(system, []).extend(lines)
    return logs


def capture(image: str, seed: int = 48) -> dict[str, list[Line]]:
    """nginx's and Redis' labelled lines, from a container of the stack image."""
    return labelled(run_driver(image, "bench.daemon_stack_driver", seed), label)
