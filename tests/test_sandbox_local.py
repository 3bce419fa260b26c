"""The development-only local backend keeps the sandbox contract (and shouts when created)."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator

import pytest
from loguru import logger

from guard.config import SandboxSettings
from guard.sandbox import Sandbox, SandboxGrants, create_sandbox
from guard.sandbox.local import LocalSandbox


@pytest.fixture
async def local() -> AsyncIterator[LocalSandbox]:
    box = create_sandbox(
        SandboxSettings(backend="local", timeout=10),
        incident_id="local-test",
        grants=SandboxGrants(secrets=["TOKEN"]),
        environ={"TOKEN": "tok-123456"},
    )
    assert isinstance(box, LocalSandbox) and isinstance(box, Sandbox)
    yield box
    await box.close()


def test_creation_logs_a_loud_warning() -> None:
    seen: list[str] = []
    sink = logger.add(seen.append, level="WARNING")
    try:
        asyncio.run(LocalSandbox(SandboxSettings(backend="local"), incident_id="w").close())
    finally:
        logger.remove(sink)
    assert any("UNSANDBOXED" in line for line in seen)


async def test_runs_commands_with_stdin_env_and_redaction(local: LocalSandbox) -> None:
    result = await local.run('cat; echo "$X $TOKEN"; exit 3', stdin="in\n", env={"X": "x"})
    assert (result.exit_code, result.stdout) == (3, "in\nx [REDACTED:TOKEN]\n")
    big = await local.run("head -c 1000000 /dev/zero")
    assert big.stdout_truncated == 1_000_000 - 65536 and "[... truncated" in big.stdout


async def test_timeout_kills_the_whole_process_group(local: LocalSandbox) -> None:
    t0 = time.monotonic()
    result = await local.run("sleep 100 & echo $!; wait", timeout=1)
    assert result.timed_out and time.monotonic() - t0 < 3
    child = int(result.stdout.split()[0])
    for _ in range(50):  # the orphaned child must be gone too
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        await asyncio.sleep(0.05)
    else:
        pytest.fail(f"background child {child} survived the timeout")
