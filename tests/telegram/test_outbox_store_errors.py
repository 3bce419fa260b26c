"""The outbox worker outlives a failing store. Found by the fault soak (``bench.soak``): a full
disk raised out of the worker, the task ended silently, and no message went out until a
restart."""

from __future__ import annotations

import asyncio

from loguru import logger

from guard.notify.telegram.outbox import OutboxWorker, enqueue
from guard.store.models import OutboxMessage
from tests.helpers.telegram import CHAT
from tests.telegram.conftest import World


async def _until(predicate, within: float, what: str) -> None:
    for _ in range(int(within * 10)):
        if predicate():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


async def test_a_store_error_does_not_end_the_outbox(world: World) -> None:
    warnings: list[str] = []
    sink = logger.add(warnings.append, level="WARNING", format="{message}")
    with world.db.engine.begin() as conn:  # the store fails: the outbox table is away
        conn.exec_driver_sql("ALTER TABLE outbox RENAME TO outbox_away")
    stop = asyncio.Event()
    task = asyncio.create_task(OutboxWorker(world.bot, world.db).run(stop))
    try:
        await _until(lambda: any("store failed" in w for w in warnings), 10, "the store error")
        assert not task.done()
        with world.db.engine.begin() as conn:  # the store is back
            conn.exec_driver_sql("ALTER TABLE outbox_away RENAME TO outbox")
        enqueue(world.db, method="send", chat_id=CHAT, text="after the store came back")
        await _until(
            lambda: world.count(OutboxMessage, OutboxMessage.status == "sent") == 1,
            20,
            "the message to go out after the store came back",
        )
    finally:
        stop.set()
        await task
        logger.remove(sink)
