"""The suite's ``guard`` commands run forked from a process that imported the libraries
(``tests.helpers.cli_fork``): they answer exactly as a fresh ``python -m guard.cli`` would."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import GuardHome
from tests.helpers import cli_fork
from tests.helpers.agent import wait_for

pytestmark = pytest.mark.unit


def _plain(home: GuardHome, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "guard.cli", *args],
        cwd=home.root,
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    )


def _env(home: GuardHome) -> dict[str, str]:
    return {**os.environ, "GUARD_CONFIG": str(home.config)}


@pytest.mark.parametrize(
    "args",
    [("--version",), ("check-config",), ("incidents", "show", "99"), ("no-such-verb",)],
    ids=["version", "check-config", "missing-incident", "unknown-verb"],
)
def test_a_forked_command_answers_as_a_fresh_interpreter(home: GuardHome, args: tuple) -> None:
    home.playbook("web", [{"id": "web", "type": "http", "url": "http://127.0.0.1:9/"}])
    forked = cli_fork.run(list(args), cwd=home.root, env=_env(home), timeout=60)
    plain = _plain(home, *args)
    assert (forked.returncode, forked.stdout, forked.stderr) == (
        plain.returncode,
        plain.stdout,
        plain.stderr,
    )


def test_a_forked_command_past_its_time_is_killed(home: GuardHome) -> None:
    home.playbook("web", [{"id": "web", "type": "http", "url": "http://127.0.0.1:9/"}])
    env = {**_env(home), "GUARD_HTTP_PORT": "0"}
    with pytest.raises(subprocess.TimeoutExpired):
        cli_fork.run(["run", "--no-agent"], cwd=home.root, env=env, timeout=3)


def test_a_spawned_guard_run_stops_on_sigterm_and_a_kill_reads_as_sigkill(home: GuardHome) -> None:
    home.playbook("web", [{"id": "web", "type": "http", "url": "http://127.0.0.1:9/"}])
    env = {**_env(home), "GUARD_HTTP_PORT": "0"}
    log = home.root / "run.log"
    for sig, code in ((signal.SIGTERM, 0), (signal.SIGKILL, -signal.SIGKILL)):
        with open(log, "w") as out:
            proc = cli_fork.spawn(["run", "--no-agent"], cwd=home.root, env=env, out=out.fileno())
        started = functools.partial(_running, log, proc)
        wait_for(started, 60, "guard run to start")
        assert proc.poll() is None, log.read_text()
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=0.2)
        assert proc.poll() is None  # a wait that timed out leaves poll() working
        proc.send_signal(sig)
        assert proc.wait(timeout=60) == code, log.read_text()
        assert proc.poll() == code
        if sig == signal.SIGTERM:
            assert "guard stopped" in log.read_text()


def _running(log: Path, proc: cli_fork.Process) -> bool:
    return "guard running" in log.read_text() or proc.poll() is not None
