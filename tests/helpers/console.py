"""The console's outbox worker in a test: what was queued for the console, written to the log."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from guard.notify.console import ConsoleChannel
from guard.notify.outbox import queue
from guard.notify.outbox.worker import OutboxWorker
from guard.store.db import Database
from tests.helpers.intake import eventually


@contextlib.asynccontextmanager
async def console_worker(db: Database, group_wait: float = 0.0) -> AsyncIterator[None]:
    """The console's outbox worker runs in the body, and until what was queued is written."""
    stop = asyncio.Event()
    run = OutboxWorker(ConsoleChannel(db), db, group_wait=group_wait).run(stop)
    task = asyncio.create_task(run)
    try:
        yield
        await eventually(lambda: not queue.pending(db, "console"), "the console's rows")
    finally:
        stop.set()
        await task
