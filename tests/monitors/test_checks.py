"""The check scheduler (bounded concurrency, coalescing, lag) and shared HTTP clients."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass
from typing import Any, cast

from guard.app.checks import EARLY, CheckScheduler, phase
from guard.monitors.http import HttpMonitor
from guard.monitors.http_clients import ClientConfig, HttpClients
from guard.playbooks.models import HttpMonitorSpec
from guard.telemetry import metrics


@dataclass
class Fake:
    id: str
    interval: float = 0.05
    jitter: float = 0.0
    type: str = "fake"

    async def check(self, state: object) -> None: ...

    async def close(self) -> None: ...


def _lag_count() -> float:
    return sum(
        s.value
        for m in metrics.REGISTRY.collect()
        if m.name == "guard_check_lag_seconds"
        for s in m.samples
        if s.name.endswith("_count") and s.labels["type"] == "fake"
    )


async def test_no_more_checks_run_at_once_than_the_bound() -> None:
    running, most, runs = 0, 0, 0

    async def check(m: object) -> None:
        nonlocal running, most, runs
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.02)
        running -= 1
        runs += 1

    before = _lag_count()
    fakes: list[Any] = [Fake(f"m{i}") for i in range(30)]
    checks = CheckScheduler(fakes, check, max_concurrent=4)
    checks.start()
    await asyncio.sleep(0.5)
    assert checks.running and checks.scheduled("m7") and not checks.scheduled("nope")
    await checks.stop()
    assert most == 4
    assert runs >= 30  # every monitor checked at least once
    assert _lag_count() - before >= runs  # every start was timed
    assert not checks.running


async def test_a_check_still_running_is_not_started_again() -> None:
    starts = 0

    async def slow(m: object) -> None:
        nonlocal starts
        starts += 1
        await asyncio.sleep(0.35)

    checks = CheckScheduler([cast(Any, Fake("slow", interval=0.05))], slow, max_concurrent=8)
    checks.start()
    await asyncio.sleep(0.5)
    await checks.stop()
    assert starts == 2  # at 0 and once the first ended: never two at once
    assert checks.coalesced > 0


def test_phases_spread_monitors_over_their_interval() -> None:
    phases = sorted(phase(i) for i in range(1000))
    gaps = [b - a for a, b in itertools.pairwise(phases)]
    assert all(0 <= p < 1 for p in phases) and max(gaps) < 0.005


def test_guard_monitors_counts_by_type() -> None:
    metrics.set_monitors(["http", "http", "logfile"])
    text = metrics.render().decode()
    assert 'guard_monitors{type="http"} 2.0' in text
    assert 'guard_monitors{type="logfile"} 1.0' in text


def _http(i: int, **kw: object) -> HttpMonitor:
    spec = HttpMonitorSpec.model_validate(
        {"id": f"w{i}", "type": "http", "url": f"http://127.0.0.1:1/{i}", **kw}
    )
    return HttpMonitor(spec, clients=POOL)


POOL = HttpClients()


async def test_monitors_share_one_client_per_tls_and_proxy_configuration() -> None:
    monitors = [_http(i) for i in range(5)] + [
        _http(9, tls_verify=False),
        _http(10, proxy="http://127.0.0.1:3128"),
    ]
    for m in monitors:
        await m.check({})  # unreachable: still acquires its client
    assert POOL.count() == 3
    a = POOL.acquire(ClientConfig())
    assert a is POOL.acquire(ClientConfig())
    await POOL.release(ClientConfig())
    await POOL.release(ClientConfig())
    for m in monitors[:4]:
        await m.close()
    assert POOL.count() == 3 and not a.closed  # one user left
    for m in monitors[4:]:
        await m.close()
    assert POOL.count() == 0 and a.closed  # the last user closed it


async def test_update_keeps_kept_monitors_starts_new_ones_and_cancels_dropped_ones() -> None:
    runs: dict[str, int] = {}
    cancelled: list[str] = []

    async def check(m: Any) -> None:
        runs[m.id] = runs.get(m.id, 0) + 1
        if m.id == "stuck":
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                cancelled.append(m.id)
                raise

    kept = Fake("kept", interval=0.05)
    stuck = Fake("stuck", interval=0.05)
    checks = CheckScheduler(cast(Any, [kept, stuck]), check, max_concurrent=4)
    checks.start()
    await asyncio.sleep(0.2)
    before = runs["kept"]
    checks.update(cast(Any, [Fake("new", interval=10.0), kept]))
    await asyncio.sleep(0.2)
    assert cancelled == ["stuck"]  # its check under way was cancelled
    assert runs["new"] == 1  # checked at once, then on its own interval
    assert runs["kept"] > before  # still on its schedule
    assert checks.scheduled("new") and checks.scheduled("kept") and not checks.scheduled("stuck")
    await checks.stop()


async def test_checks_due_close_together_start_in_one_wake_up_and_never_late_or_too_early() -> None:
    loop = asyncio.get_running_loop()
    starts: dict[str, list[float]] = {}

    async def check(m: Any) -> None:
        starts.setdefault(m.id, []).append(loop.time())

    fakes: list[Any] = [Fake(f"m{i}", interval=5.0) for i in range(500)]
    checks = CheckScheduler(fakes, check, max_concurrent=500)
    t0 = loop.time()
    checks.start()
    await asyncio.sleep(1.2)
    await checks.stop()
    later = sorted(t for times in starts.values() for t in times[1:])
    assert len(later) > 80  # the monitors whose phase falls in the first 1.2 s of the interval
    wake_ups = 1 + sum(1 for a, b in itertools.pairwise(later) if b - a > 0.005)
    assert wake_ups < len(later) / 3  # ~1.2 s / EARLY, not one per check (was one each)
    for i, m in enumerate(fakes):
        for t in starts[m.id][1:]:
            due = t0 + 5.0 * phase(i)
            assert due - EARLY - 0.01 <= t  # at most EARLY before it is due
            assert t <= due + 1.0  # and not held back (a loaded machine starts late anyway)
