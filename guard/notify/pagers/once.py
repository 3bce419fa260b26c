"""``guard run --once`` delivers the due pages before it exits: one bounded drain of the outbox
(``PageWorker.drain``), every send claimed like the worker's.

On SQLite the process is the leader (``Solo``). With replicas (``ha`` on PostgreSQL) it must
lead to send: if no replica holds the leader lease it takes it for the drain (renewed while it
lasts, fencing every send) and hands it back after; if a leader is running, that leader's page
worker delivers the pages and this sends nothing.
"""

from __future__ import annotations

import asyncio

from loguru import logger

from guard import cluster
from guard.cluster import Leadership, Solo
from guard.config import Settings
from guard.notify.pagers.worker import PageWorker
from guard.store.db import Database


async def deliver_once(settings: Settings, db: Database, leadership: Leadership | Solo) -> int:
    """Drain the outbox once if this process may lead; how many attempts were made."""
    if not settings.notifiers.names():
        return 0
    worker = PageWorker(settings, db)
    if not isinstance(leadership, Leadership):
        return await worker.drain()
    over = asyncio.Event()
    try:
        await asyncio.to_thread(leadership.tick)  # take the lease if it is free
    except Exception as exc:  # the lease is out of reach: so are the pages' claims
        logger.warning("pages not delivered: the leader lease is out of reach ({})", exc)
    else:
        if not leadership.is_leader():
            logger.info("pages are left to the leader's page worker (another replica leads)")
    if not leadership.is_leader():
        over.set()
        await leadership.run(over, over.set)  # only drops this process's heartbeat row
        return 0
    renewing = asyncio.create_task(leadership.run(over, over.set), name="pages-lease")
    try:
        with cluster.installed(leadership):
            return await worker.drain()
    finally:
        over.set()
        await renewing  # hands the lease back
