"""Helpers for end-to-end agent tests: a real `guard run` process and incident polling."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import yaml

from tests.conftest import GuardHome
from tests.helpers import cli_fork
from tests.helpers.images import BUSYBOX_IMAGE

if TYPE_CHECKING:
    from guard.store.models import Incident

REPO = Path(__file__).resolve().parents[2]


def new_incident(*, state: str = "open", at: datetime | None = None, **fields: Any) -> Incident:
    """An incident row, not stored: HTTP ``http_status`` on ``http://svc``, critical, "down",
    unless ``fields`` (any column) say otherwise; ``at``: when it was opened, first and last seen
    (default: now)."""
    from guard.domain.records import utcnow
    from guard.store.models import Incident, IncidentState

    when = at or utcnow()
    row: dict[str, Any] = {
        "fingerprint": "fp",
        "check_key": "k",
        "monitor_id": "web",
        "source": "http",
        "target": "http://svc",
        "kind": "http_status",
        "severity": "critical",
        "title": "down",
        "message": "down",
        "state": IncidentState(state),
        "opened_at": when,
        "first_seen": when,
        "last_seen": when,
    }
    return Incident(**(row | fields))


def stored_incident(session: Any, state: str = "open", **fields: Any) -> Any:
    """``new_incident`` written straight into the store (flushed: it has its id)."""
    inc = new_incident(state=state, **fields)
    session.add(inc)
    session.flush()
    assert inc.id is not None
    return inc


def as_cli(user: str) -> dict[str, Any]:
    """``queue_command``'s actor and gate for ``guard approve|deny|reply`` run by ``user``."""
    from guard.incidents.gate import Actor, default_gate

    return {"actor": Actor("cli", user), "gate": default_gate({})}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def setup_docker_home(
    home: GuardHome,
    *,
    skills: Sequence[str] = (),
    diagnostics: Sequence[dict[str, Any]] = (),
    **config: Any,
) -> dict[str, str]:
    """A Guard home watching containers with a unique label; returns the label to put on them.

    ``guard run`` serves /metrics on a free local port (see ``scrape``); ``diagnostics`` are
    the playbook's sandboxed diagnostics.
    """
    value = uuid.uuid4().hex[:12]
    path = home.playbook(
        "containers",
        [
            {
                "id": "containers",
                "type": "docker",
                "selector": {"label": f"guard.test.watch={value}"},
                "every": "1h",
            }
        ],
    )
    if diagnostics:
        book = yaml.safe_load(path.read_text())
        book["diagnostics"] = list(diagnostics)
        path.write_text(yaml.safe_dump(book, sort_keys=False))
    skills_dir = home.root / "skills"
    skills_dir.mkdir(exist_ok=True)
    for name in skills:
        shutil.copytree(REPO / "skills" / name, skills_dir / name)
    base: dict[str, Any] = {
        "sandbox": {"image": BUSYBOX_IMAGE, "timeout": "20s"},
        "agent": {"verify_timeout": "8s", "poll_interval": "200ms", "settle": "1s"},
        "triage": {"flap_window": "1s"},
        "skills": {"git_author": "Guard Test <guard@test>"},
        "http_host": "127.0.0.1",
        "http_port": free_port(),
    }
    for key, value_ in config.items():
        base[key] = {**base.get(key, {}), **value_} if isinstance(value_, dict) else value_
    home.write_config(base)
    return {"guard.test.watch": value}


FAILS_AFTER_FIRST_START = "test -f /tmp/started && exit 3; touch /tmp/started; sleep 600"
"""A container command whose first run sleeps and every later start exits at once."""


def quick_start_home(home: GuardHome) -> dict[str, str]:
    """``setup_docker_home`` with ``docker-start-exited`` verifying within 3 s (so a start
    that cannot cure fails fast); returns the label to put on the containers."""
    labels = setup_docker_home(home, skills=["docker-start-exited"])
    tune_skill(
        home,
        "docker-start-exited",
        steps=[
            {"action": "docker.start", "args": {"container": "{{ incident.target }}"}},
            {"wait": "1s"},
            {"verify": {"timeout": "3s", "interval": "500ms"}},
        ],
    )
    return labels


def incidents(home: GuardHome) -> list[dict[str, Any]]:
    return json.loads(home.cli("incidents", "list", "--json").stdout)


def show(home: GuardHome, incident_id: int) -> dict[str, Any]:
    return json.loads(home.cli("incidents", "show", str(incident_id), "--json").stdout)


def wait_for(predicate: Callable[[], Any], within: float = 60.0, what: str = "condition") -> Any:
    """``predicate()`` once it is true, asked every 0.2 s at first, then less often (up to 1 s:
    most predicates run a ``guard`` command, and polling them was most of the suite's CPU),
    and once more at the deadline."""
    deadline = time.monotonic() + within
    pause = 0.2
    while True:
        value = predicate()
        if value:
            return value
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(min(pause, left))
        pause = min(pause * 1.25, 1.0)


def find(home: GuardHome, **match: Any) -> dict[str, Any] | None:
    for inc in incidents(home):
        if all(inc.get(k) == v for k, v in match.items()):
            return inc
    return None


def tune_skill(home: GuardHome, name: str, **changes: Any) -> None:
    """Change top-level keys of a copied skill's skill.yaml."""
    path = home.root / "skills" / name / "skill.yaml"
    spec = yaml.safe_load(path.read_text())
    spec.update(changes)
    path.write_text(yaml.safe_dump(spec, sort_keys=False))


def db_rows(home: GuardHome, sql: str) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(home.root / "data" / "guard.db")) as conn:
        return conn.execute(sql).fetchall()


def scrape(home: GuardHome, name: str) -> float:
    """The value of series ``name`` on the running guard's /metrics."""
    port = yaml.safe_load(home.config.read_text())["http_port"]
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    raise AssertionError(f"{name} not in /metrics")


def past_flap_window(home: GuardHome, incident_id: int, window: float = 1.0) -> bool:
    """Whether the incident resolved more than the flap window ago (so the same fault opens a
    new incident instead of reopening it)."""
    resolved = show(home, incident_id)["resolved_at"]
    return (
        resolved is not None
        and (datetime.now(UTC) - datetime.fromisoformat(resolved)).total_seconds() > window + 0.2
    )


def sandboxes_of(docker_client: Any, incident_id: int, pid: int) -> list[Any]:
    """The sandbox containers that Guard process ``pid`` holds for an incident (one removed
    between the engine's list and the SDK's look at it is not held: ``ignore_removed``)."""
    return list(
        docker_client.containers.list(
            all=True,
            ignore_removed=True,
            filters={
                "label": ["guard.sandbox=1", f"guard.incident={incident_id}", f"guard.pid={pid}"]
            },
        )
    )


@contextmanager
def running_guard(home: GuardHome) -> Iterator[tuple[cli_fork.Process, Path]]:
    """`guard run` in the background, once it says it runs: (the process, its log file).
    Stopped with SIGTERM afterwards; the end of its log is printed for failing tests."""
    path = home.root / f"guard-{time.time_ns()}.log"
    log = open(path, "w")  # noqa: SIM115
    env = {**os.environ, "GUARD_CONFIG": str(home.config)}
    proc = cli_fork.spawn(["run"], cwd=home.root, env=env, out=log.fileno())
    try:
        wait_for(
            lambda: "guard running" in path.read_text() or proc.poll() is not None,
            30,
            "guard to start",
        )
        assert proc.poll() is None, path.read_text()
        yield proc, path
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        log.close()
        print(path.read_text()[-6000:])


@contextmanager
def guard_process(home: GuardHome) -> Iterator[cli_fork.Process]:
    """`guard run` in the background, its Docker events stream attached; yields the process."""
    with running_guard(home) as (proc, _):
        time.sleep(0.5)  # the events stream is attached
        yield proc
