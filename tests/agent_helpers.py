"""Helpers for end-to-end agent tests: a real `guard run` process and incident polling."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.conftest import GuardHome
from tests.images import BUSYBOX_IMAGE

REPO = Path(__file__).resolve().parent.parent


def setup_docker_home(home: GuardHome, *, skills: list[str] = (), **config: Any) -> dict[str, str]:
    """A Guard home watching containers with a unique label; returns the label to put on them."""
    value = uuid.uuid4().hex[:12]
    home.playbook("containers", [{"id": "containers", "type": "docker",
                                  "selector": {"label": f"guard.test.watch={value}"},
                                  "every": "1h"}])
    skills_dir = home.root / "skills"
    skills_dir.mkdir(exist_ok=True)
    for name in skills:
        shutil.copytree(REPO / "skills" / name, skills_dir / name)
    base: dict[str, Any] = {
        "sandbox": {"image": BUSYBOX_IMAGE, "timeout": "20s"},
        "agent": {"verify_timeout": "8s", "poll_interval": "200ms"},
        "triage": {"flap_window": "1s"},
        "skills": {"git_author": "Guard Test <guard@test>"},
    }
    for key, value_ in config.items():
        base[key] = {**base.get(key, {}), **value_} if isinstance(value_, dict) else value_
    home.write_config(base)
    return {"guard.test.watch": value}


def incidents(home: GuardHome) -> list[dict[str, Any]]:
    return json.loads(home.cli("incidents", "list", "--json").stdout)


def show(home: GuardHome, incident_id: int) -> dict[str, Any]:
    return json.loads(home.cli("incidents", "show", str(incident_id), "--json").stdout)


def wait_for(predicate: Callable[[], Any], within: float = 60.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def find(home: GuardHome, **match: Any) -> dict[str, Any] | None:
    for inc in incidents(home):
        if all(inc.get(k) == v for k, v in match.items()):
            return inc
    return None


@contextmanager
def guard_process(home: GuardHome) -> Iterator[subprocess.Popen[str]]:
    """`guard run` in the background; stopped (SIGTERM) afterwards."""
    log = open(home.root / f"guard-{time.time_ns()}.log", "w")  # noqa: SIM115
    env = {**os.environ, "GUARD_CONFIG": str(home.config)}
    proc = subprocess.Popen([sys.executable, "-m", "guard.cli", "run"], cwd=home.root, env=env,
                            stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: "guard running" in Path(log.name).read_text() or proc.poll() is not None,
                 30, "guard to start")
        assert proc.poll() is None, Path(log.name).read_text()
        time.sleep(0.5)  # the events stream is attached
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        log.close()
        print(Path(log.name).read_text()[-4000:])
