"""Shared by the cluster tests: real `guard run` replicas, and the checks every lease backend
(the database row, the Kubernetes Lease) must pass."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from guard.cluster import Leadership
from guard.cluster.status import replicas
from guard.domain.exceptions import NotLeader
from guard.store.db import Database
from tests.conftest import GuardHome
from tests.helpers import cli_fork
from tests.helpers.agent import free_port, wait_for


def one_leads(db: Database, one: Leadership, two: Leadership) -> None:
    """After a tick each: ``one`` leads and may claim; ``two`` is a standby whose claim is
    refused; ``guard cluster status`` says so, in its shape."""
    assert one.is_leader() and not two.is_leader()
    assert two.role == "standby"
    with db.session() as session:
        assert one.claim(session, "step", 7) == one.token
    with pytest.raises(NotLeader), db.session() as session:
        two.claim(session, "step", 8)
    status = {r["id"]: r for r in replicas(db)}
    assert status["one"]["leader"] and status["one"]["lease_until"]
    assert not status["two"]["leader"] and status["two"]["lease_until"] is None
    assert set(status["two"]) == {"id", "pid", "host", "leader", "last_seen", "lease_until"}


class Replicas:
    """`guard run` processes on one Guard home, each with its own replica id and port."""

    def __init__(self, home: GuardHome) -> None:
        self.home = home
        self.procs: dict[str, cli_fork.Process] = {}
        self.ports: dict[str, int] = {}
        self.logs: dict[str, Path] = {}

    def start(self, name: str) -> cli_fork.Process:
        port = free_port()
        path = self.home.root / f"guard-{name}.log"
        env = {
            **os.environ,
            "GUARD_CONFIG": str(self.home.config),
            "GUARD_HA__REPLICA_ID": name,
            "GUARD_HTTP_PORT": str(port),
        }
        with open(path, "w") as log:
            proc = cli_fork.spawn(["run"], cwd=self.home.root, env=env, out=log.fileno())
        self.procs[name], self.ports[name], self.logs[name] = proc, port, path
        return proc

    def lead_and_follow(self) -> None:
        """Start replica a, wait until it leads and runs its monitors; then start b."""
        self.start("a")
        wait_for(lambda: self.leader() == "a", 40, "replica a to lead")
        wait_for(lambda: "guard running" in self.log("a"), 30, "a to run its monitors")
        self.start("b")
        wait_for(lambda: len(self.status()) == 2, 40, "replica b to report")

    def readyz(self, name: str) -> dict[str, Any]:
        return httpx.get(f"http://127.0.0.1:{self.ports[name]}/readyz", timeout=10).json()

    def signals(self, name: str, kind: str) -> float:
        """How many ``kind`` signals replica ``name`` has stored (its ``guard_signals_total``)."""
        text = httpx.get(f"http://127.0.0.1:{self.ports[name]}/metrics", timeout=10).text
        prefix = "guard_signals_total{"
        return sum(
            float(line.split()[-1])
            for line in text.splitlines()
            if line.startswith(prefix) and f'kind="{kind}"' in line
        )

    def status(self) -> list[dict[str, Any]]:
        out = self.home.cli("cluster", "status", "--json").stdout
        return list(json.loads(out)["replicas"])

    def leader(self) -> str | None:
        leaders = [r["id"] for r in self.status() if r["leader"]]
        assert len(leaders) <= 1, leaders
        return leaders[0] if leaders else None

    def log(self, name: str) -> str:
        return self.logs[name].read_text()

    def stop_all(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGCONT)
                    proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
            print(f"--- replica {name} ---\n{self.log(name)[-5000:]}")
