"""What ``guard run`` keeps going for one chat channel: its outbox worker, which first settles
the posts a crash left in flight, and its sync (``guard.notify.sync``)."""

from __future__ import annotations

import asyncio

from guard.notify.channel import Channel
from guard.notify.fanout import ChannelNotifier
from guard.notify.outbox.worker import OutboxWorker
from guard.notify.sync import Sync
from guard.store.db import Database


class ChannelRunner:
    def __init__(
        self, channel: Channel, db: Database, notifier: ChannelNotifier, *, group_wait: float = 0
    ) -> None:
        self.worker = OutboxWorker(channel, db, group_wait=group_wait)
        self.sync = Sync(db, channel.name, notifier.chat_id, notifier.closed_text, channel.markup)
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self, stop: asyncio.Event) -> None:
        """Settle what is in flight, then send and sync until ``stop`` is set."""
        await self.recover()
        self.run(stop)

    async def recover(self) -> None:
        """Settle the posts a crash left in flight (before a gateway takes replies to them)."""
        await self.worker.recover()

    def run(self, stop: asyncio.Event) -> None:
        """Send and sync in the background until ``stop`` is set."""
        name = self.worker.channel.name
        self._tasks = [
            asyncio.create_task(self.worker.run(stop), name=f"{name}:outbox"),
            asyncio.create_task(self.sync.run(stop), name=f"{name}:sync"),
        ]

    async def wait(self) -> None:
        """Until both have stopped (after ``stop`` is set)."""
        await asyncio.gather(*self._tasks, return_exceptions=True)
