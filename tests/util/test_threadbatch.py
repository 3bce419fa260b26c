"""ThreadBatch: the blocking calls of one loop turn share one worker hand-off."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from guard.util.threadbatch import ThreadBatch

pytestmark = pytest.mark.unit

WHO = contextvars.ContextVar("who", default="nobody")


def _where(n: int, *, plus: int = 0) -> tuple[int, str, str]:
    if n < 0:
        raise ValueError(f"negative: {n}")
    return n + plus, threading.current_thread().name, WHO.get()


async def test_calls_of_one_turn_share_a_worker_and_each_gets_its_own_answer() -> None:
    batch = ThreadBatch(most=4)
    WHO.set("caller")
    results = await asyncio.gather(
        *(batch.run(_where, n, plus=100) for n in range(10)), return_exceptions=True
    )
    assert [r[0] for r in results] == [100 + n for n in range(10)]  # type: ignore[index]
    assert batch.handoffs == 3  # 10 calls, at most 4 a worker (was one hand-off each)
    assert threading.current_thread().name not in {r[1] for r in results}  # type: ignore[index]
    assert {r[2] for r in results} == {"caller"}  # type: ignore[index]  # the caller's context


async def test_a_failing_call_fails_only_its_caller_and_a_cancelled_one_is_skipped() -> None:
    batch = ThreadBatch()
    bad = asyncio.ensure_future(batch.run(_where, -1))
    good = asyncio.ensure_future(batch.run(_where, 2))
    gone = asyncio.ensure_future(batch.run(_where, 3))
    await asyncio.sleep(0)  # all three asked in one turn
    gone.cancel()
    results = await asyncio.gather(bad, good, return_exceptions=True)
    assert isinstance(results[0], ValueError) and "negative: -1" in str(results[0])
    assert results[1][0] == 2  # type: ignore[index]
    assert gone.cancelled()
    assert batch.handoffs == 1


async def test_calls_in_later_turns_go_in_later_batches() -> None:
    batch = ThreadBatch()
    for n in range(3):
        assert (await batch.run(_where, n))[0] == n
    assert batch.handoffs == 3
