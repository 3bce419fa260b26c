"""The Redis starter skill against a real Redis (the stack image, built offline) filled to its
``maxmemory`` under ``noeviction``, under a real ``guard run`` that follows a client's log: the
client's writes are refused ("OOM command not allowed"), the question carries ``probe.redis``'s
memory and keyspace, and once approved the sandbox's ``redis-cli`` sets ``allkeys-lru``: the
writes go through and the log rule that fired goes quiet. Redis and its client share an
internal network of the test's; Guard's probe reaches Redis there from the host, the sandbox by
joining it."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest

from tests.conftest import GuardHome
from tests.flows.image import ensure_stack_image
from tests.helpers.agent import (
    db_rows,
    find,
    running_guard,
    setup_docker_home,
    tune_skill,
    wait_for,
)
from tests.helpers.starter import approve_and_heal
from tests.probes.test_stores import FILL, REDIS_MAX

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

SKILL = "redis-at-maxmemory"
PASSWORD = "r3dis-Starter-pw"
PREFIX = f"guard-test-{os.getpid()}-{time.time_ns() % 10**6}-starter-redis"
WRITES = (  # a client writing 20 kB every 0.3 s and logging what Redis answers
    "i=0; while :; do i=$((i+1)); "
    "head -c 20000 /dev/zero | tr '\\0' x | redis-cli -h {host} --no-auth-warning -x SET w$i; "
    "sleep 0.3; done"
)


@pytest.fixture
def redis(docker_client: Any) -> Iterator[tuple[Any, Any, str]]:
    """(Redis, its client, the internal network's name); Redis at 95% of ``maxmemory``."""
    image = ensure_stack_image(docker_client)
    net = docker_client.networks.create(f"{PREFIX}-net", internal=True)
    started: list[Any] = []
    try:
        cmd = [
            "redis-server", "--protected-mode", "no", "--save", "", "--requirepass", PASSWORD,
            "--maxmemory", str(REDIS_MAX), "--maxmemory-policy", "noeviction",
        ]  # fmt: skip
        server = docker_client.containers.run(
            image, cmd, name=f"{PREFIX}-db", network=net.name, detach=True
        )
        started.append(server)
        cli = ["redis-cli", "-a", PASSWORD, "--no-auth-warning"]
        wait_for(lambda: b"PONG" in server.exec_run([*cli, "ping"]).output, 30, "Redis")
        server.exec_run([*cli, "eval", FILL, "0", str(REDIS_MAX)])
        client = docker_client.containers.run(
            image,
            ["sh", "-c", WRITES.format(host=server.name)],
            name=f"{PREFIX}-app",
            network=net.name,
            environment={"REDISCLI_AUTH": PASSWORD},
            labels={"guard.test.starter": PREFIX},
            detach=True,
        )
        started.append(client)
        yield server, client, net.name
    finally:
        for container in started:
            container.remove(force=True)
        net.remove()


def redis_home(
    home: GuardHome, docker_client: Any, redis: tuple[Any, Any, str], monkeypatch: Any
) -> None:
    """Guard following the client's log, its probe and sandbox reaching Redis by REDIS_URL."""
    server, _, network = redis
    server.reload()
    address = server.attrs["NetworkSettings"]["Networks"][network]["IPAddress"]
    monkeypatch.setenv("REDIS_URL", f"redis://:{PASSWORD}@{address}:6379/0")
    setup_docker_home(
        home,
        skills=[SKILL],
        sandbox={"image": ensure_stack_image(docker_client)},  # it has redis-cli
        probes={"allow": [{"host": address, "ports": [6379]}], "secrets": ["REDIS_URL"]},
    )
    rule = {"kind": "redis_oom", "pattern": "OOM command not allowed", "quiet": "3s"}
    monitor = {"id": "app", "type": "docker", "every": "1h", "rules": [rule]}
    book = home.playbook(
        "app", [{**monitor, "selector": {"label": f"guard.test.starter={PREFIX}"}}]
    )
    book.write_text(book.read_text() + f"sandbox: {{network: {network}}}\n")


def test_redis_at_maxmemory_is_diagnosed_and_evicts_once_approved(
    home: GuardHome,
    docker_client: Any,
    redis: tuple[Any, Any, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, client, _ = redis
    redis_home(home, docker_client, redis, monkeypatch)
    with running_guard(home) as (_, log):
        record, asked = approve_and_heal(home, log, "redis_oom", SKILL)
        said = partial(client.logs, tail=3)
        wait_for(lambda: said() == b"OK\nOK\nOK\n", 30, "the client's writes to go through")
    evidence = record["details"]["evidence"]
    assert "section=memory" in evidence and "section=keyspace" in evidence, evidence
    assert "of maxmemory 4.00M (" in evidence and "policy noeviction" in evidence, evidence
    assert "db0:keys=" in evidence, evidence
    # the approver sees which secret the probe reads, and no sandbox note on a Guard-side probe
    assert "$ probe.redis secret=REDIS_URL section=memory\n" in evidence, evidence
    assert "not approved yet" not in evidence, evidence
    assert "policy noeviction" in asked and "maxmemory-policy allkeys-lru" in asked, asked
    assert PASSWORD not in log.read_text() and PASSWORD not in evidence
    [(status, by)] = db_rows(home, "select status, approved_by from remediation_run")
    assert status == "verified" and by.startswith("cli:")
    cli = ["redis-cli", "-a", PASSWORD, "--no-auth-warning", "CONFIG", "GET", "maxmemory-policy"]
    assert b"allkeys-lru" in server.exec_run(cli).output
    assert find(home, id=record["id"], state="resolved")


def test_a_remedy_that_changes_nothing_is_not_verified_while_the_lines_go_on(
    home: GuardHome,
    docker_client: Any,
    redis: tuple[Any, Any, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The log rule's check is the running stream's: a line that came during ``quiet`` fails it
    (a docker monitor's poll reads no log, so it used to pass whatever the stream saw)."""
    redis_home(home, docker_client, redis, monkeypatch)
    steps = [{"run": "true"}, {"verify": {"timeout": "12s", "interval": "1s"}}]
    tune_skill(home, SKILL, steps=steps)
    with running_guard(home):
        asked = wait_for(partial(find, home, kind="redis_oom", state="awaiting_human"), 90, "asked")
        said = home.cli("approve", str(asked["id"]), "--skill", SKILL, check=False)
        assert said.returncode == 1 and "ran but did not cure the incident" in said.stdout
        wait_for(
            lambda: db_rows(home, "select status from remediation_run where status != 'running'"),
            60,
            "the run to end",
        )
    [(status,)] = db_rows(home, "select status from remediation_run")
    assert status == "failed"
    assert not find(home, id=asked["id"], state="resolved")
