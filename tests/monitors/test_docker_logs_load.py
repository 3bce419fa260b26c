"""Container logs under bad input on the real engine: a line that never ends, 300 containers."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from guard.monitors.docker import DockerMonitor
from tests.monitors.test_docker_logs import Following, spec

pytestmark = pytest.mark.docker

BOOM = [{"kind": "boom", "pattern": "BOOM", "group_by": "rule"}]


def booms(run: Following) -> list[Any]:
    return [s for o in run.seen for s in o.signals if s.kind == "boom"]


async def wait_until(predicate: Any, within: float, what: Any) -> None:
    deadline = time.monotonic() + within
    while not predicate():
        assert time.monotonic() < deadline, what() if callable(what) else what
        await asyncio.sleep(0.1)


async def test_a_line_with_no_newline_is_counted_once_and_held_in_bounded_memory(containers):
    """The engine hands a line with no newline over in 16 KiB pieces; Guard counts it once
    ``flush_after`` after its first bytes, drops the rest up to its newline, and never holds
    more than ``max_line_bytes`` of it however long it goes on (the bound has no time in it,
    so an hour of it is these seconds of it, longer)."""
    value = uuid.uuid4().hex[:12]
    labels = {"guard.watch.test": value}
    monitor = DockerMonitor(spec(f"guard.watch.test={value}", rules=BOOM, max_line_bytes=65536))
    monitor.baseline({})
    logs = monitor._logs
    assert logs is not None
    async with Following(monitor) as run:
        # 20 000 bytes: one 16 KiB piece reaches Guard, the rest waits in the engine forever
        waiting = containers.run(
            "waiting",
            "sleep 0.3; printf 'BOOM waiting '; head -c 20000 /dev/zero | tr '\\0' x; sleep 300",
            labels=labels,
        )
        endless = containers.run(
            "endless",
            "sleep 0.3; printf 'BOOM endless '; "
            "while true; do head -c 16384 /dev/zero | tr '\\0' y; sleep 0.005; done",
            labels=labels,
        )
        await wait_until(lambda: len(booms(run)) >= 2, 20, lambda: run.seen)
        held = []
        for _ in range(30):  # the endless line goes on: megabytes of it
            held.append(logs.held_bytes())
            await asyncio.sleep(0.1)
        got_by_target = {s.target: s.count for s in booms(run)}
        assert waiting.reload() is None and waiting.status == "running"
    assert got_by_target == {waiting.name: 1, endless.name: 1}
    assert sum(s.count for s in booms(run)) == 2  # nothing more came of either line
    assert max(held) <= 2 * (65536 + 64)  # each stream holds at most one line's worth
    message = {s.target: s.message for s in booms(run)}[waiting.name]
    assert message.startswith("BOOM waiting xxx")
    written = await asyncio.to_thread(endless.logs)
    assert len(written) > 2 * 65536  # the line did go on past what Guard held


@contextlib.contextmanager
def many_containers(image: str, count: int, labels: dict[str, str]) -> Iterator[Any]:
    """``count`` tiny containers started (and removed) by a few threads at a time, on a client
    that waits for a loaded engine (a start took over 30 s in CI beside the other workers)."""
    import docker

    client = docker.from_env(timeout=180)

    def start(i: int, shared: str | None = None) -> Any:
        # the others join the first one's (empty) network, IPC and PID namespaces: namespaces
        # of their own each cost the engine and the kernel 86 of the test's 194 CPU-seconds
        # (measured machine-wide; the logs each one writes are still its own to follow)
        joined = {"network_mode": "none", "ipc_mode": "shareable"}
        if shared is not None:
            joined = {
                "network_mode": f"container:{shared}",
                "ipc_mode": f"container:{shared}",
                "pid_mode": f"container:{shared}",
            }
        return client.containers.run(
            image,
            # a line every 20 s, not 2: 300 shells forking a `sleep` each 2 s were 150
            # processes a second for the engine, the kernel and the rest of the suite to carry
            ["sh", "-c", f'echo "BOOM from {i}"; while sleep 20; do echo "BOOM again {i}"; done'],
            name=f"guard-test-many-{labels['guard.watch.test']}-{i}",
            detach=True,
            labels={"guard.test": "1", **labels},
            **joined,
        )

    def remove(c: Any) -> None:
        with contextlib.suppress(Exception):
            c.remove(force=True)

    started: list[Any] = []
    pool = ThreadPoolExecutor(4)
    try:
        started.append(start(0))
        first = started[0].id
        for c in pool.map(lambda i: start(i, first), range(1, count)):
            started.append(c)
        yield started
    finally:
        label = ",".join(f"{k}={v}" for k, v in labels.items())
        left = client.containers.list(all=True, ignore_removed=True, filters={"label": label})
        list(pool.map(remove, {c.id: c for c in [*started, *left]}.values()))
        pool.shutdown()
        client.close()


@pytest.mark.timeout(400)  # starting 300 containers: 70 s in CI, over 120 on a loaded machine
async def test_300_containers_are_followed_without_a_thread_each(busybox_image):
    value = uuid.uuid4().hex[:12]
    labels = {"guard.watch.test": value}
    monitor = DockerMonitor(spec(f"guard.watch.test={value}", rules=BOOM, multiline="none"))
    monitor.baseline({})
    logs = monitor._logs
    assert logs is not None
    threads_before = threading.active_count()
    most = threads_before
    async with Following(monitor) as run:
        with many_containers(busybox_image, 300, labels) as started:
            names = {c.name for c in started}

            def seen() -> set[str]:
                nonlocal most
                most = max(most, threading.active_count())
                return {s.target for s in booms(run)}

            await wait_until(lambda: seen() >= names, 120, lambda: len(names - seen()))
            assert len(logs._tasks) == 300  # every one followed, each by a task
            # they go on writing, and what they write keeps coming
            await wait_until(lambda: len(_again(run)) >= 250, 60, lambda: len(_again(run)))
    assert most - threads_before < 40  # a few worker threads, not one per container
    assert not logs._tasks  # every stream ended with the monitor


def _again(run: Following) -> set[str]:
    return {s.target for s in booms(run) if s.message.startswith("BOOM again")}


async def test_a_10000_frame_traceback_from_a_container_is_one_capped_event(containers):
    value = uuid.uuid4().hex[:12]
    rules = [
        {"kind": "app_error", "pattern": "Error|Traceback", "group_by": "rule"},
        {"kind": "after", "pattern": "done after it"},
    ]
    monitor = DockerMonitor(spec(f"guard.watch.test={value}", rules=rules))
    monitor.baseline({})
    trace = (
        "echo 'Traceback (most recent call last):'; i=0; while [ $i -lt 10000 ]; do "
        'echo "  File \\"/app/r.py\\", line $i, in f"; echo \'    f()\'; i=$((i+1)); done; '
        "echo 'RecursionError: maximum recursion depth exceeded'"
    )
    script = f"sleep 0.3; {{ {trace}; {trace}; echo 'done after it'; }} >&2; sleep 300"
    async with Following(monitor) as run:
        containers.run("deep", script, labels={"guard.watch.test": value})
        await wait_until(
            lambda: any(s.kind == "after" for o in run.seen for s in o.signals), 60, "the end"
        )
        await asyncio.sleep(1.5)
    errors = [s for o in run.seen for s in o.signals if s.kind == "app_error"]
    assert sum(s.count for s in errors) == 2  # one event per traceback, 20 002 lines each
    assert all(len(s.details["evidence"]) <= 65536 for s in errors)
    assert all(s.details["evidence"].startswith("Traceback (most recent") for s in errors)
