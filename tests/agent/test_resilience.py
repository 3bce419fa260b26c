"""``guard run`` survives monitors that fail: each failure is logged and becomes a signal."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from typing import Any

from guard.app import Guard
from guard.domain.records import Observation


def test_guard_run_keeps_running_when_monitors_fail(home, tmp_path):
    silent = socket.socket()  # accepts connections, never answers: an HTTP timeout
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    port = silent.getsockname()[1]
    home.playbook(
        "broken",
        [
            {
                "id": "bad-path",
                "type": "logfile",
                "path": str(tmp_path / "nope" / "app.log"),
                "every": "1s",
                "rules": [{"kind": "err", "pattern": "ERROR"}],
            },
            {
                "id": "slow-web",
                "type": "http",
                "url": f"http://127.0.0.1:{port}/",
                "every": "1s",
                "timeout": "300ms",
            },
            {"id": "no-docker", "type": "docker", "selector": {"label": "x=y"}, "every": "1s"},
        ],
    )
    env = {
        **os.environ,
        "GUARD_CONFIG": str(home.config),
        "DOCKER_HOST": f"unix://{tmp_path}/no-such-docker.sock",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "guard.cli", "run"],
        cwd=home.root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        kinds: set[tuple[str, str]] = set()
        while time.monotonic() < deadline:
            time.sleep(0.5)
            assert proc.poll() is None, proc.communicate()
            out = home.cli("incidents", "list", "--json").stdout
            kinds = {(i["target"], i["kind"]) for i in json.loads(out)}
            if len(kinds) >= 3:
                break
        assert ("bad-path", "monitor_error") in kinds
        assert ("no-docker", "monitor_error") in kinds
        assert (f"http://127.0.0.1:{port}/", "http_timeout") in kinds
        time.sleep(2.5)  # several more failing cycles
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGTERM)
        _stdout, stderr = proc.communicate(timeout=20)
        silent.close()
    assert proc.returncode == 0, stderr
    assert "monitor bad-path failed" in stderr and "does not exist" in stderr
    assert "cannot reach the Docker engine" in stderr
    assert "guard stopped" in stderr


class ExplodingMonitor:
    """A monitor with a bug in it."""

    id, type, interval, jitter = "buggy", "test", 1.0, 0.0

    async def check(self, state: Mapping[str, Any]) -> Observation:
        raise ZeroDivisionError("division by zero")

    async def close(self) -> None:
        pass


async def test_an_unexpected_exception_becomes_a_signal_and_clears(home):
    g = Guard(home.settings(), [])
    g.monitors = [ExplodingMonitor()]
    events = await g.run_once()
    assert [e.type for e in events] == ["opened"]
    g2 = Guard(home.settings(), [])

    class Fixed(ExplodingMonitor):
        async def check(self, state: Mapping[str, Any]) -> Observation:
            return Observation([])

    g2.monitors = [Fixed()]
    events = await g2.run_once()
    assert [e.type for e in events] == ["resolved"]  # the monitor works again


async def test_a_batch_the_store_refuses_for_good_is_given_up_not_retried_forever(home):
    """Only an unavailable store (``OperationalError``: locked, full, away) is waited out; a
    batch that fails for any other reason is dropped after 3 tries, so it cannot hold up
    every later batch (``tests/reliability/test_store_locked.py`` has the waiting side)."""
    from sqlalchemy.exc import OperationalError

    g = Guard(home.settings(), [])
    tries: list[str] = []

    def refused(batch: list[Observation]) -> list[Any]:
        tries.append("poison")
        raise ValueError("a row the store will never take")

    g.apply = refused  # type: ignore[method-assign,assignment]
    await g.intake.store([Observation([], {}, "m")])
    assert tries == ["poison"] * 3

    def locked(batch: list[Observation]) -> list[Any]:
        tries.append("locked")
        if tries.count("locked") < 5:
            raise OperationalError("BEGIN IMMEDIATE", {}, Exception("database is locked"))
        return []

    g.apply = locked  # type: ignore[method-assign,assignment]
    await g.intake.store([Observation([], {}, "m")])
    assert tries.count("locked") == 5  # past 3: waited out until stored
