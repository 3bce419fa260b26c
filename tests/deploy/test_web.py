"""The HTTP endpoint of ``guard run``: probed with a real client against a real subprocess."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from guard.app import Guard
from guard.web.server import WebServer
from tests.conftest import GuardHome
from tests.helpers.agent import find, guard_process, scrape, setup_docker_home, show, wait_for


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Running:
    def __init__(self, proc: subprocess.Popen[str], port: int) -> None:
        self.proc, self.port = proc, port
        self.url = f"http://127.0.0.1:{port}"
        self.err = ""  # its stderr, once it has stopped

    def get(self, path: str, timeout: float = 10) -> httpx.Response:
        return httpx.get(self.url + path, timeout=timeout)

    def wait_ready(self, deadline: float = 30) -> None:
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            assert self.proc.poll() is None, self.proc.communicate()
            try:
                if self.get("/readyz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise AssertionError("guard run never became ready")


@contextlib.contextmanager
def guard_running(home: GuardHome, port: int, **env: str) -> Iterator[Running]:
    """``guard run --no-agent`` until the block ends, then SIGTERM: it must exit 0 (its stderr
    is left on ``Running.err``)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "guard.cli", "run", "--no-agent"],
        cwd=home.root,
        env={**os.environ, "GUARD_CONFIG": str(home.config), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    running = Running(proc, port)
    try:
        running.wait_ready()
        yield running
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, running.err = proc.communicate(timeout=30)
    assert proc.returncode == 0, running.err


@pytest.fixture
def guard_run(home: GuardHome) -> Iterator[Running]:
    home.playbook(
        "web", [{"id": "down", "type": "http", "url": "http://127.0.0.1:1/", "every": "1s"}]
    )
    port = free_port()
    with guard_running(home, port, PORT=str(port), GUARD_HTTP_HOST="127.0.0.1") as running:
        yield running
    assert f"on http://127.0.0.1:{port}" in running.err


def metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    raise AssertionError(f"{name} not in /metrics")


def test_healthz_readyz_and_metrics(guard_run: Running, home: GuardHome) -> None:
    before = datetime.now(UTC)
    r = guard_run.get("/healthz")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["scheduler"]["running"] is True
    assert body["scheduler"]["heartbeat_age_seconds"] <= 15
    assert body["database"]["writable"] is True
    assert body["database"]["age_seconds"] == 0
    # the probe really wrote: the row's time is after the request was sent
    with contextlib.closing(sqlite3.connect(home.root / "data" / "guard.db")) as con:
        (value,) = con.execute(
            "select value from monitor_state where key='guard:healthz'"
        ).fetchone()
    assert datetime.fromisoformat(json.loads(value)["at"]) >= before
    again = guard_run.get("/healthz").json()["database"]  # within PROBE_EVERY: no new write
    assert again["writable"] is True and again["write_ms"] == body["database"]["write_ms"]

    ready = guard_run.get("/readyz").json()
    assert {k: ready[k] for k in ("status", "role", "monitors", "unscheduled")} == {
        "status": "ready",
        "role": "leader",
        "monitors": 1,
        "unscheduled": [],
    }
    assert ready["fencing_token"] is None  # one box (SQLite): no lease, always the leader

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # the failing monitor opens an incident within seconds
        text = guard_run.get("/metrics").text
        if 'guard_incidents{state="open"} 1.0' in text:
            break
        time.sleep(0.3)
    assert guard_run.get("/metrics").headers["content-type"].startswith("text/plain")
    assert 'guard_incidents{state="open"} 1.0' in text
    assert 'guard_incidents{state="resolved"} 0.0' in text
    assert (
        metric(text, 'guard_signals_total{kind="http_unreachable",source="http",status="firing"}')
        >= 1
    )
    assert metric(text, 'guard_incident_events_total{type="opened"}') == 1
    assert metric(text, "guard_detection_latency_seconds_count") == 1
    assert metric(text, 'guard_remediations_total{outcome="succeeded"}') == 0
    assert metric(text, "guard_sandbox_exec_seconds_count") == 0
    assert metric(text, "guard_time_to_resolve_seconds_count") == 0
    assert metric(text, "process_resident_memory_bytes") > 0

    assert guard_run.get("/nope").status_code == 404
    assert httpx.post(guard_run.url + "/healthz").status_code == 405
    assert httpx.head(guard_run.url + "/readyz").status_code == 200


def test_a_locked_database_makes_healthz_fail_and_recover(
    guard_run: Running, home: GuardHome
) -> None:
    con = sqlite3.connect(home.root / "data" / "guard.db", timeout=1, isolation_level=None)
    con.execute("BEGIN EXCLUSIVE")  # another writer holds the database
    try:
        r = guard_run.get("/healthz", timeout=20)
        assert r.status_code == 503
        assert r.json()["database"] == {"writable": False, "error": "timed out", "age_seconds": 0}
        assert guard_run.get("/readyz").status_code == 200  # readiness is not liveness
    finally:
        con.execute("ROLLBACK")
        con.close()
    end = time.monotonic() + 15
    while guard_run.get("/healthz", timeout=20).status_code != 200:
        assert time.monotonic() < end, "healthz did not recover after the lock was released"
        time.sleep(0.5)


def test_run_once_does_not_serve(home: GuardHome) -> None:
    home.playbook("web", [{"id": "down", "type": "http", "url": "http://127.0.0.1:1/"}])
    port = free_port()
    with socket.socket() as holder:  # if --once tried to listen, it would log a bind error
        holder.bind(("127.0.0.1", port))
        holder.listen()
        env = {
            **os.environ,
            "GUARD_CONFIG": str(home.config),
            "GUARD_HTTP_PORT": str(port),
            "GUARD_HTTP_HOST": "127.0.0.1",
        }
        proc = subprocess.run(
            [sys.executable, "-m", "guard.cli", "run", "--once"],
            cwd=home.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 0, proc.stderr
    assert "1 incident(s) opened" in proc.stdout
    assert "serving" not in proc.stderr and "cannot serve" not in proc.stderr


def _wait_for_baseline(home: GuardHome, monitor_id: str, proc: subprocess.Popen[str]) -> None:
    """Until ``guard run`` has stored where the monitor starts reading (its baseline)."""
    db = home.root / "data" / "guard.db"
    end = time.monotonic() + 60
    while time.monotonic() < end and proc.poll() is None:
        with (
            contextlib.suppress(sqlite3.Error),
            contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as c,
        ):
            if c.execute(
                "select 1 from monitor_state where key = ?", (f"monitor:{monitor_id}",)
            ).fetchone():
                return
        time.sleep(0.2)
    raise AssertionError("guard run did not start watching")


def test_a_taken_port_is_logged_and_monitoring_goes_on(home: GuardHome) -> None:
    log = home.root / "app.log"
    log.write_text("")
    home.playbook(
        "log",
        [
            {
                "id": "log",
                "type": "logfile",
                "path": str(log),
                "every": "1s",
                "rules": [{"kind": "boom", "pattern": "BOOM"}],
            }
        ],
    )
    port = free_port()
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        env = {
            **os.environ,
            "GUARD_CONFIG": str(home.config),
            "GUARD_HTTP_PORT": str(port),
            "GUARD_HTTP_HOST": "127.0.0.1",
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
            _wait_for_baseline(home, "log", proc)  # lines written before it are not news
            with open(log, "a") as f:
                f.write("BOOM\n")
            end = time.monotonic() + 20
            while '"boom"' not in home.cli("incidents", "list", "--json").stdout:
                assert time.monotonic() < end and proc.poll() is None
                time.sleep(0.5)
        finally:
            proc.send_signal(signal.SIGTERM)
            _out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert f"cannot serve /healthz and /metrics on 127.0.0.1:{port}" in err


async def test_healthz_fails_without_a_running_scheduler(home: GuardHome) -> None:
    guard = Guard(home.settings(), home.playbooks_loaded())
    web = WebServer(guard, AsyncIOScheduler(timezone=UTC))
    status, _ctype, body = await web.healthz()
    assert status == 503 and b'"running": false' in body
    assert web.readyz()[0] == 503
    await web.close()  # safe before start


@pytest.mark.docker
def test_a_real_remediation_is_counted_on_metrics(home: GuardHome, containers: Any) -> None:
    labels = setup_docker_home(
        home,
        skills=["docker-start-exited"],
        diagnostics=[{"run": "echo looking at {{ incident.target }}"}],
    )
    victim = containers.run("victim", "sleep 600", labels=labels)
    succeeded = 'guard_remediations_total{outcome="succeeded"}'
    with guard_process(home):
        assert scrape(home, succeeded) == 0
        assert scrape(home, "guard_sandbox_exec_seconds_count") == 0
        victim.kill()
        inc = wait_for(
            lambda: find(home, target=victim.name, state="resolved"),
            60,
            "the skill to heal the victim",
        )
        assert "looking at" in show(home, inc["id"])["details"]["evidence"]  # ran in a sandbox
        assert scrape(home, succeeded) == 1
        assert scrape(home, "guard_sandbox_exec_seconds_count") == 1
        assert scrape(home, "guard_sandbox_exec_seconds_sum") > 0
        for other in ("verify_failed", "failed", "rate_limited", "blocked", "escalated"):
            assert scrape(home, f'guard_remediations_total{{outcome="{other}"}}') == 0
