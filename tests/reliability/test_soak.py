"""The fault soak compressed to five minutes (``python -m bench.soak --minutes 60`` is the full
one): a real ``guard run`` on a private dockerd, a tmpfs data volume and a faked wall clock, with
every fault of the hour-long soak injected once. Needs root (mount, dockerd) and libfaketime."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from bench.soak import run, summary
from bench.soak_faults import FAKETIME_LIBS

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(1200),
    pytest.mark.skipif(os.geteuid() != 0, reason="mounts a tmpfs and runs a dockerd: needs root"),
    pytest.mark.skipif(shutil.which("dockerd") is None, reason="needs dockerd (docker.io)"),
    pytest.mark.skipif(
        not any(os.path.exists(lib) for lib in FAKETIME_LIBS), reason="needs libfaketime"
    ),
]


def _host_bridge() -> bool:
    return Path("/sys/class/net/docker0").exists()


def test_five_minutes_of_faults_lose_nothing_and_guard_never_exits() -> None:
    bridge = _host_bridge()
    result = run(minutes=5)
    # the soak's own dockerd (restarted twice) leaves the machine's engine alone: it once
    # deleted the host's docker0 as it started, cutting every container on it off the network
    assert _host_bridge() == bridge
    print(summary(result))  # the figures, with -s
    goals = result["goals"]
    figures = {k: result[k] for k in ("incidents", "telegram", "faults", "clock")}
    # RSS is bounded loosely here (a loaded 2-core machine, a short run); the hour-long soak
    # holds it to 5%
    assert (result["rss"]["growth_percent"] or 0) < 25, result["rss"]
    strict = {k: v for k, v in goals.items() if k != "rss_growth_under_5_percent"}
    assert all(strict.values()), (strict, figures)
