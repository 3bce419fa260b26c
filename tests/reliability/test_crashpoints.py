"""The crash-point hook: deterministic, test-only, and naming only points that exist."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from guard.harness import crashpoints

GUARD = Path(crashpoints.__file__).resolve().parent.parent  # guard/


def called_points() -> set[str]:
    found: set[str] = set()
    for path in GUARD.rglob("*.py"):
        found |= set(re.findall(r'reached\(\s*"([a-z_.]+)"', path.read_text()))
        for a, b in re.findall(
            r'reached\(\s*"([a-z_.]+)" if .*? else "([a-z_.]+)"', path.read_text()
        ):
            found |= {a, b}
    return found


@pytest.mark.unit
def test_every_point_called_is_listed_and_every_listed_point_is_called():
    called = called_points()
    assert called == set(crashpoints.POINTS)
    assert len(called) >= 20


@pytest.mark.unit
def test_unset_it_does_nothing(monkeypatch):
    monkeypatch.delenv("GUARD_CRASH_AT", raising=False)
    monkeypatch.setattr(crashpoints, "_target", crashpoints._UNREAD)  # read at the first point
    for point in crashpoints.POINTS:
        crashpoints.reached(point)


def test_it_kills_the_process_at_the_nth_time_the_point_is_reached():
    code = (
        "import sys\nfrom guard.harness.crashpoints import reached\n"
        "for i in range(5):\n"
        "    reached('other')\n"
        "    reached('step.ended')\n"
        "    print(i, flush=True)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env={"GUARD_CRASH_AT": "step.ended:3", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        cwd=GUARD.parent,
        timeout=60,
    )
    assert proc.returncode == -signal.SIGKILL
    assert proc.stdout.split() == ["0", "1"]
    assert "crashpoint step.ended reached (3)" in proc.stderr
