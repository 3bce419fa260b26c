"""The disk starter skill against a real volume: a 64 MiB tmpfs mounted on this host, filled by
a container appending to its log in it, under a real ``guard run`` with a ``type: resources``
monitor on that mount: the question carries ``disk.usage``'s largest files, and once approved
``disk.truncate`` empties the log in place (the writer goes on appending) and leaves the data
file alone; the resources check that fired passes."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import GuardHome
from tests.flows.image import ensure_stack_image
from tests.helpers.agent import db_rows, running_guard, setup_docker_home
from tests.helpers.starter import approve_and_heal
from tests.helpers.tmpfs import mounted_tmpfs

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

SKILL = "disk-nearly-full"
NAME = f"guard-test-{os.getpid()}-{time.time_ns() % 10**6}-starter-disk"
WRITES = (  # 48 MiB of log at once, then 100 kB a second more; and 4 MiB of data
    "head -c 4194304 /dev/zero > /data/orders.db; "
    "head -c 50331648 /dev/zero >> /data/logs/app.log; "
    "while :; do head -c 20000 /dev/zero >> /data/logs/app.log; sleep 0.2; done"
)


@pytest.fixture
def volume(docker_client: Any, tmp_path: Path) -> Iterator[tuple[Path, Any]]:
    with mounted_tmpfs(tmp_path / "volume") as mount:
        (mount / "logs").mkdir()
        writer = docker_client.containers.run(
            ensure_stack_image(docker_client),
            ["sh", "-c", WRITES],
            name=NAME,
            detach=True,
            volumes={str(mount): {"bind": "/data", "mode": "rw"}},
            labels={"guard.test": "starter-disk"},
        )
        try:
            yield mount, writer
        finally:
            writer.remove(force=True)


def test_a_full_volume_shows_its_largest_files_and_its_log_is_emptied(
    home: GuardHome, volume: tuple[Path, Any]
) -> None:
    mount, writer = volume
    setup_docker_home(home, skills=[SKILL])
    monitor = {"id": "data", "type": "resources", "host": "local", "every": "1s"}
    home.playbook("data", [{**monitor, "mounts": [str(mount)], "disk": {"above": "70%"}}])
    with running_guard(home) as (_, log):
        record, asked = approve_and_heal(home, log, "disk_high", SKILL)
        writer.reload()
        assert writer.status == "running"  # the writer goes on
    evidence = record["details"]["evidence"]
    assert f"$ disk.usage path=local:{mount}" in evidence, evidence
    assert f"MiB  {mount}/logs/app.log" in evidence and f"4.0 MiB  {mount}/orders.db" in evidence
    assert f"MiB  {mount}/logs/app.log" in asked and "disk.truncate" in asked, asked
    [(status,)] = db_rows(home, "select status from remediation_run")
    assert status == "verified"
    assert (mount / "orders.db").stat().st_size == 4 * 2**20  # not a log: left alone
    assert (mount / "logs" / "app.log").stat().st_size < 10 * 2**20  # emptied, growing again
