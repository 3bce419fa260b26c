"""A real local PostgreSQL server for tests: ``bench.pg_server``'s, skipped without the binaries.

The ``postgres_url`` fixture (tests/conftest.py) serves it: one throwaway server (no fsync) per
test process (each xdist worker, the serial run), started on first use and removed at the end;
``fresh_database`` makes an empty database on it per test.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from bench.pg_server import fresh_database, postgres_bindir, postgres_server

__all__ = ["fresh_database", "serve_postgres"]


def serve_postgres() -> Iterator[str]:
    """Start a server; yield its URL; stop and remove it (skips the test without PostgreSQL)."""
    if postgres_bindir() is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL server binaries needed: apt-get install postgresql")
        pytest.skip("no PostgreSQL server binaries (apt-get install postgresql)")
    with postgres_server(throwaway=True) as url:
        yield url
