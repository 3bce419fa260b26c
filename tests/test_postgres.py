"""The store on a real PostgreSQL server (started by the test), through a database URL."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not bins:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL server binaries needed: apt-get install postgresql")
        pytest.skip("no PostgreSQL server binaries (apt-get install postgresql)")
    bindir = Path(bins[-1]).parent
    root = Path(tempfile.mkdtemp(prefix="guard-pg-"))  # not under pytest's 0700 folder
    as_user: list[str] = []
    if os.geteuid() == 0:  # postgres refuses to run as root
        shutil.chown(root, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    port = _free_port()
    data = root / "data"
    subprocess.run(
        [*as_user, str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "guard"],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            *as_user,
            str(bindir / "pg_ctl"),
            "-D",
            str(data),
            "-w",
            "-l",
            str(root / "log"),
            "-o",
            f"-p {port} -k {root} -c listen_addresses=127.0.0.1",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql+psycopg://guard@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"],
            check=False,
            capture_output=True,
        )
        shutil.rmtree(root, ignore_errors=True)


def test_incidents_and_audit_on_postgres(home, postgres_url, tmp_path):
    import json

    log = tmp_path / "app.log"
    log.write_text("")
    home.write_config({"database_url": postgres_url})
    home.playbook(
        "app",
        [
            {
                "id": "app-log",
                "type": "logfile",
                "path": str(log),
                "rules": [{"kind": "app_error", "pattern": "ERROR"}],
            }
        ],
    )
    home.cli("run", "--once")
    log.write_text("".join(f"ERROR request {i} failed after {i}ms\n" for i in range(500)))
    home.cli("run", "--once")
    [inc] = json.loads(home.cli("incidents", "list", "--json").stdout)
    assert inc["count"] == 500 and inc["opened_at"].endswith("+00:00")
    shown = json.loads(home.cli("incidents", "show", str(inc["id"]), "--json").stdout)
    assert shown["timeline"][0]["type"] == "opened"
    assert "audit chain ok" in home.cli("audit", "verify").stdout
