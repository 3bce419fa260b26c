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
