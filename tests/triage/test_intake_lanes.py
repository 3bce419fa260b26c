"""The intake stores a quiet source's signal ahead of a log storm's lines, never behind them."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from guard.domain.records import Grouping, Observation, Signal
from guard.triage.queue import Intake, lanes

pytestmark = pytest.mark.unit


def signal(target: str, kind: str, grouping: Grouping | None = None) -> Signal:
    return Signal(
        monitor_id="containers",
        source="docker",
        target=target,
        kind=kind,
        message=f"{kind} on {target}",
        grouping=grouping,
    )


def storm(n: int) -> Observation:
    grouped = Grouping(by="template", content="ERROR upstream timed out")
    return Observation([signal("noisy", "app_error", grouped)], {"noisy": {"ts": n}}, "containers")


DIE = Observation([signal("api", "container_exited")], {}, "containers")


def test_a_batch_of_one_kind_is_one_transaction() -> None:
    assert lanes([DIE, DIE]) == [[DIE, DIE]]
    lines = [storm(1), storm(2)]
    assert lanes(lines) == [lines]


def test_signals_go_before_the_lines_they_were_queued_with() -> None:
    first, second = storm(1), storm(2)
    assert lanes([first, DIE, second]) == [[DIE], [first, second]]  # each lane keeps its order


async def test_the_intake_stores_the_die_first_in_a_transaction_of_its_own() -> None:
    loop = asyncio.get_running_loop()
    stored: list[list[Observation]] = []
    done = asyncio.Event()

    def apply(batch: list[Observation]) -> None:  # on the intake's writer thread
        stored.append(batch)
        if sum(map(len, stored)) == 4:
            loop.call_soon_threadsafe(done.set)

    intake = Intake(apply, forget=lambda _m: None, stopping=lambda: False)
    lines = [storm(1), storm(2), storm(3)]
    for obs in (lines[0], lines[1], DIE, lines[2]):
        intake.put_nowait(obs)  # queued together: one batch
    consumer = asyncio.create_task(intake.consume())
    try:
        await asyncio.wait_for(done.wait(), 30)
    finally:
        consumer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await consumer
    assert stored == [[DIE], lines]


def passed(target: str) -> Observation:
    ok = Signal(
        monitor_id=target, source="http", target=target, kind="http_ok", message="200", status="ok"
    )
    return Observation([ok], {}, target)


def test_passing_checks_with_log_lines_are_one_transaction() -> None:
    """The lines go apart only from news: passing checks do not wait on them."""
    calm = [passed("web"), storm(1), passed("api")]
    assert lanes(calm) == [calm]
    web, lines = passed("web"), storm(1)
    assert lanes([web, DIE, lines]) == [[web, DIE], [lines]]


async def test_routine_observations_wait_for_company_and_news_goes_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A thousand healthy monitors' passes are stored a few transactions a second; a failure
    that comes meanwhile is not held back by them: it takes them along at once."""
    from guard.triage import queue

    monkeypatch.setattr(queue, "ROUTINE_WAIT", 3600.0)  # only news ends the wait here
    loop = asyncio.get_running_loop()
    stored: list[list[Observation]] = []
    done = asyncio.Event()

    def apply(batch: list[Observation]) -> None:
        stored.append(batch)
        loop.call_soon_threadsafe(done.set)

    intake = Intake(apply, forget=lambda _m: None, stopping=lambda: False)
    consumer = asyncio.create_task(intake.consume())
    try:
        passes = [passed(f"web-{i}") for i in range(3)]
        for obs in passes:
            await intake.put(obs)
            await asyncio.sleep(0.05)  # checks end one by one
        await asyncio.sleep(0.2)
        assert stored == []  # routine: still waiting for company
        await intake.put(DIE)
        await asyncio.wait_for(done.wait(), 30)
    finally:
        consumer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await consumer
    assert stored == [[*passes, DIE]]  # in the order they came, in one transaction


async def test_a_sender_that_waits_for_its_pass_is_not_kept_waiting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from guard.triage import queue

    monkeypatch.setattr(queue, "ROUTINE_WAIT", 3600.0)
    stored: list[list[Observation]] = []
    intake = Intake(stored.append, forget=lambda _m: None, stopping=lambda: False)
    consumer = asyncio.create_task(intake.consume())
    try:
        await asyncio.sleep(0)  # the consumer starts
        assert await intake.submit(passed("alert"), wait=30)  # a resolved alert's hook call
    finally:
        consumer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await consumer
    assert len(stored) == 1


async def test_a_stop_stores_what_the_consumer_held_back_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Guard stops (``drain``, then the consumer is cancelled) while a routine observation
    waits for company: it is stored, once."""
    from guard.triage import queue

    monkeypatch.setattr(queue, "ROUTINE_WAIT", 3600.0)
    stored: list[list[Observation]] = []
    intake = Intake(stored.append, forget=lambda _m: None, stopping=lambda: False)
    consumer = asyncio.create_task(intake.consume())
    held = passed("web")
    await intake.put(held)
    await asyncio.sleep(0.1)  # the consumer took it and waits for company
    assert intake.queue.empty() and stored == []
    await intake.drain()
    consumer.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await consumer
    assert stored == [[held]]
