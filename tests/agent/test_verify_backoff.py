"""Verification checks at once after the remedy, then backs off up to the step's interval; a pass
of a target that can flap counts only once it held for the settle period."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from guard.agent.verify import FIRST_RECHECK, Verifier
from guard.domain.records import Observation, Signal
from guard.skills.model import VerifySpec

pytestmark = pytest.mark.unit


def look(up: bool, down_kind: str, down: str, **facts: Any) -> Observation:
    """One look at container ``api``: running (``ok``, with ``facts``), or ``down_kind``."""
    return Observation(
        [
            Signal(
                monitor_id="containers",
                source="docker",
                target="api",
                kind="container_running" if up else down_kind,
                message="running" if up else down,
                status="ok" if up else "firing",
                details=facts if up else {},
            )
        ]
    )


class Flaky:
    """A monitor whose check fails ``failing`` times for ``api``, then passes."""

    id = "containers"

    def __init__(self, failing: int) -> None:
        self.failing = failing
        self.checks = 0

    async def check(self, state: dict[str, Any]) -> Observation:
        self.checks += 1
        return look(self.checks > self.failing, "container_exited", "exited with code 1")


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


class Looping:
    """A container in a restart loop: each look sees it restarting or, for a moment, running
    on a new start; from look ``stays_from`` on, it runs on one start."""

    id = "containers"

    def __init__(self, stays_from: int | None = None) -> None:
        self.stays_from = stays_from
        self.checks = 0

    async def check(self, state: dict[str, Any]) -> Observation:
        self.checks += 1
        staying = self.stays_from is not None and self.checks >= self.stays_from
        start = self.stays_from if staying else self.checks
        up = staying or self.checks % 2 == 1
        return look(
            up,
            "container_restarting",
            "restarting (last exit code 1)",
            started_at=f"start {start}",
            restart_count=start,
            restart_policy="always",
        )


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Verification's clock, moved on by each sleep it asks for (nothing is slept)."""
    import guard.agent.verify as verify

    now = [0.0]
    real = asyncio.sleep

    async def sleep(delay: float) -> None:
        now[0] += delay
        await real(0)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    monkeypatch.setattr(verify, "time", SimpleNamespace(monotonic=lambda: now[0]))
    return now


async def test_a_moment_up_in_a_restart_loop_is_not_verified(clock: list[float]) -> None:
    spec = VerifySpec(interval=0.5, timeout=4, settle=3)
    verdict = await Verifier(None, {})._loop(Looping(), INCIDENT, spec)  # type: ignore[arg-type]
    assert not verdict.passed
    assert "a pass did not hold" in verdict.reason, verdict.reason


async def test_a_pass_counts_once_the_same_start_held_for_the_settle_period(
    clock: list[float],
) -> None:
    spec = VerifySpec(interval=0.5, timeout=4, settle=3)
    verdict = await Verifier(None, {})._loop(Looping(stays_from=4), INCIDENT, spec)  # type: ignore[arg-type]
    assert verdict.passed and verdict.reason.endswith("stayed up 3s"), verdict.reason
    assert clock[0] >= 3  # it began to hold after the first restarts, then held 3 s
