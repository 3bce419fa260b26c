"""Verification checks at once after the remedy, then backs off up to the step's interval."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from guard.agent.verify import FIRST_RECHECK, Verifier
from guard.records import Observation, Signal
from guard.skills.model import VerifySpec

pytestmark = pytest.mark.unit


class Flaky:
    """A monitor whose check fails ``failing`` times for ``api``, then passes."""

    id = "containers"

    def __init__(self, failing: int) -> None:
        self.failing = failing
        self.checks = 0

    async def check(self, state: dict[str, Any]) -> Observation:
        self.checks += 1
        ok = self.checks > self.failing
        return Observation(
            [
                Signal(
                    monitor_id=self.id,
                    source="docker",
                    target="api",
                    kind="container_running" if ok else "container_exited",
                    message="running" if ok else "exited with code 1",
                    status="ok" if ok else "firing",
                )
            ]
        )


INCIDENT = SimpleNamespace(
    source="docker", target="api", kind="container_exited", details={}, monitor_id="containers"
)


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The sleeps verification asked for (not slept: the test runs no clock)."""
    asked: list[float] = []
    real = asyncio.sleep

    async def sleep(delay: float) -> None:
        asked.append(delay)
        await real(0)

    monkeypatch.setattr(asyncio, "sleep", sleep)  # as ``guard.agent.verify`` calls it
    return asked


async def test_the_first_check_runs_at_once_and_passes_without_waiting(
    waits: list[float],
) -> None:
    monitor = Flaky(failing=0)
    verdict = await Verifier(None, {})._loop(monitor, INCIDENT, VerifySpec(interval=1))  # type: ignore[arg-type]
    assert verdict.passed and verdict.attempts == 1
    assert waits == []


async def test_rechecks_back_off_from_the_first_recheck_up_to_the_interval(
    waits: list[float],
) -> None:
    monitor = Flaky(failing=6)
    spec = VerifySpec(interval=0.5, timeout=60)
    verdict = await Verifier(None, {})._loop(monitor, INCIDENT, spec)  # type: ignore[arg-type]
    assert verdict.passed and verdict.attempts == 7
    assert waits == [FIRST_RECHECK, 0.1, 0.2, 0.4, 0.5, 0.5]


async def test_an_interval_shorter_than_the_first_recheck_is_kept(waits: list[float]) -> None:
    monitor = Flaky(failing=2)
    spec = VerifySpec(interval=0.02, timeout=60)
    verdict = await Verifier(None, {})._loop(monitor, INCIDENT, spec)  # type: ignore[arg-type]
    assert verdict.passed
    assert waits == [0.02, 0.02]
