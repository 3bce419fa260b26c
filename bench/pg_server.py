"""A real local PostgreSQL server (initdb + pg_ctl from the distribution's packages).

Shared by the benchmarks (``python -m bench.crash --database postgres``) and the tests'
``postgres_url`` fixture (``tests/fakes/postgres.py``): ``postgres_server`` starts one in a
temporary folder and removes it afterwards; ``fresh_database`` makes an empty database on it.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path


class NoPostgres(RuntimeError):
    """The PostgreSQL server binaries are not installed."""


def postgres_bindir() -> Path | None:
    """Where ``initdb`` and ``pg_ctl`` are (the newest installed version), if anywhere."""
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(bins[-1]).parent if bins else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# A throwaway server's data is never read after it stops, and no test crashes the machine under
# it: no fsync anywhere, and an immediate stop (no shutdown checkpoint); start and stop took
# 6-10 s and 8-10 s on a loaded 2-core box, now 3.7 s and 2.8 s (most of it initdb and rm).
# It serves a whole test process (one xdist worker), so it has room for the connections of
# many tests' databases.
THROWAWAY = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300"


@contextlib.contextmanager
def postgres_server(throwaway: bool = False) -> Iterator[str]:
    """Start a server; yield its URL (database ``postgres``); stop and remove it. A
    ``throwaway`` one (the tests') skips every fsync and the shutdown checkpoint."""
    bindir = postgres_bindir()
    if bindir is None:
        raise NoPostgres("no PostgreSQL server binaries (apt-get install postgresql)")
    root = Path(tempfile.mkdtemp(prefix="guard-pg-"))  # not under pytest's 0700 folder
    as_user: list[str] = []
    if os.geteuid() == 0:  # postgres refuses to run as root
        shutil.chown(root, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    port = _free_port()
    data = root / "data"
    subprocess.run(
        [
            *as_user,
            str(bindir / "initdb"),
            *(["--no-sync"] if throwaway else []),
            *["-D", str(data), "-A", "trust", "-U", "guard"],
        ],
        check=True,
        capture_output=True,
    )
    pg_ctl = [*as_user, str(bindir / "pg_ctl"), "-D", str(data)]
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1"
    if throwaway:
        options += f" {THROWAWAY}"
    subprocess.run(
        [*pg_ctl, "-w", "-l", str(root / "log"), "-o", options, "start"],
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql+psycopg://guard@127.0.0.1:{port}/postgres"
    finally:
        mode = "immediate" if throwaway else "fast"
        subprocess.run([*pg_ctl, "-m", mode, "stop"], check=False, capture_output=True)
        if throwaway:  # a test process's server holds every test's database: hundreds of MB
            subprocess.Popen(["rm", "-rf", str(root)], start_new_session=True)
        else:
            shutil.rmtree(root, ignore_errors=True)


def fresh_database(server_url: str) -> str:
    """A new, empty database on the server at ``server_url``; returns its URL."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    plain = server_url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return server_url.rsplit("/", 1)[0] + f"/{name}"
