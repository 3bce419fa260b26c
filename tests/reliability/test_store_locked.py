"""The store locked by another process for longer than the retries of a batch: what the
monitors saw meanwhile waits in Guard and is stored once the lock goes, none of it dropped."""

from __future__ import annotations

import time

import pytest

from bench.soak_faults import lock_sqlite
from tests.conftest import GuardHome
from tests.fakes.local_http import stop
from tests.helpers.agent import db_rows, running_guard, wait_for
from tests.helpers.telegram import Service

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def test_an_outage_seen_while_the_store_is_locked_is_stored_after_it(home: GuardHome) -> None:
    """A 3-second outage inside a 70-second lock: by the time the store takes writes again
    the service is fine, so the failed checks held in Guard are the only trace of it."""
    service = Service()
    service.healthy = True
    home.playbook(
        "web",
        [{"id": "web", "type": "http", "url": f"{service.base}/healthz", "every": "200ms"}],
    )
    home.write_config({"agent": {"enabled": False}})
    try:
        with running_guard(home) as (proc, path):
            time.sleep(1)  # checked, healthy
            # past two rounds of three tries of a 10 s busy timeout: an older Guard gave up each
            locker = lock_sqlite(home.root / "data" / "guard.db", 70)
            time.sleep(2)
            service.healthy = False
            time.sleep(3)
            service.healthy = True
            locker.wait(120)
            opened = wait_for(
                lambda: db_rows(home, "select state from incident where kind = 'http_status'"),
                60,
                "the outage's incident",
            )
            assert len(opened) == 1, opened
            assert proc.poll() is None
            assert "observations not stored" not in path.read_text()
    finally:
        stop(service.server)
