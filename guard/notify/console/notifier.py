"""``ConsoleNotifier``: the outbox's ``ChannelNotifier`` for the console, and ``ConsoleRunner``,
its outbox worker in ``guard run``. A question is a row first, written to the log by the worker:
at most once across a crash, grouped within ``console.group_wait`` (``chat.group_wait``), and
closed (edited) when it is answered anywhere. Tested by tests/notify/test_console_channel.py."""

from __future__ import annotations

import asyncio

from guard.notify.console.channel import CHAT, ConsoleChannel
from guard.notify.console.markup import ConsoleMarkup
from guard.notify.fanout import ChannelNotifier
from guard.notify.routing import Router, chats_for
from guard.notify.runner import ChannelRunner
from guard.store.db import Database


class ConsoleNotifier(ChannelNotifier):
    def __init__(
        self,
        db: Database,
        router: Router | None = None,
        *,
        chat_id: int | str = CHAT,
        public_url: str | None = None,
    ) -> None:
        chats = chats_for(router, db, CHAT)
        super().__init__(db, CHAT, chat_id, ConsoleMarkup(public_url), chats)


class ConsoleRunner:
    """The console's outbox worker and sync (``ChannelRunner``), until ``stop``."""

    def __init__(
        self, db: Database, notifier: ConsoleNotifier, *, group_wait: float, public_url: str = ""
    ) -> None:
        channel = ConsoleChannel(db, public_url)
        self.runner = ChannelRunner(channel, db, notifier, group_wait=group_wait)
        self.stopping = asyncio.Event()

    async def start(self) -> None:
        await self.runner.start(self.stopping)

    async def stop(self) -> None:
        self.stopping.set()
        await self.runner.wait()
