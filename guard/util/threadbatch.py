"""Blocking calls made in one turn of the event loop, run in one worker thread hand-off.

``asyncio.to_thread`` is a hand-off per call: a worker woken, the GIL passed to and fro, the
loop woken again for the result. 200 log files checked every 5 s were 40-60 of them a second,
and the hand-offs cost more CPU than the reads (``python -m bench.scale``). The check scheduler
starts checks due together in one wake-up (``guard.app.checks``), so their reads are asked for
in the same turn: a ``ThreadBatch`` gathers the calls of a turn and runs them one after the
other in one worker, at most ``most`` to a worker (a slow call holds back only its batch), and
hands every result back in one wake-up of the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(slots=True)
class _Call:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    future: asyncio.Future[Any]
    context: contextvars.Context = field(default_factory=contextvars.copy_context)


class ThreadBatch:
    """``await batch.run(fn, *args, **kwargs)`` is ``await asyncio.to_thread(fn, ...)``, batched."""

    def __init__(self, most: int = 16) -> None:
        self.most = most
        self._pending: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, list[_Call]] = (
            weakref.WeakKeyDictionary()
        )
        self.handoffs = 0  # worker hand-offs so far (for tests and benchmarks)

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        calls = self._pending.get(loop)
        if calls is None:  # the first call of this turn: the batch goes at the turn's end
            calls = self._pending[loop] = []
            loop.call_soon(self._flush, loop)
        future: asyncio.Future[T] = loop.create_future()
        calls.append(_Call(fn, args, kwargs, future))
        return await future

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        calls = self._pending.pop(loop, [])
        for start in range(0, len(calls), self.most):
            self.handoffs += 1
            loop.run_in_executor(None, _work, loop, calls[start : start + self.most])


def _work(loop: asyncio.AbstractEventLoop, calls: list[_Call]) -> None:
    """In a worker: each call in turn, then every outcome handed back at once."""
    outcomes: list[tuple[_Call, Any, BaseException | None]] = []
    for call in calls:
        try:
            outcomes.append((call, call.context.run(call.fn, *call.args, **call.kwargs), None))
        except BaseException as exc:  # handed to the caller, as ``to_thread`` would
            outcomes.append((call, None, exc))
    with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
        loop.call_soon_threadsafe(_settle, outcomes)


def _settle(outcomes: list[tuple[_Call, Any, BaseException | None]]) -> None:
    for call, result, exc in outcomes:
        if call.future.done():  # its caller was cancelled meanwhile
            continue
        if exc is None:
            call.future.set_result(result)
        else:
            call.future.set_exception(exc)
