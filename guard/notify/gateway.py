"""What every chat channel's runner inside ``guard run`` does the same way: start and stop, the
daily report on ``report.cron`` (so every configured channel gets it), and its outbox worker
and sync (``ChannelRunner``), settled before anything is received (a reply may quote a post a
crash left in flight).

A channel's gateway subclasses ``Gateway`` and keeps only what is its own: ``connect`` (reach
its service, start the outbox with ``run_outbox``, receive), the calls its report is made of
(``report_calls``), and what it closes (``closing`` before the tasks end, ``close`` after).
The channel being unreachable at start is not an error: ``connect`` keeps trying in the
background while monitoring goes on, and the outbox fills up meanwhile.

Tested by tests/notify/test_gateway.py, and on every channel by its run tests.
"""

from __future__ import annotations

import asyncio
import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine
from datetime import date
from typing import Any, ClassVar

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger
from loguru import logger
from sqlmodel import Session

from guard.config import Settings
from guard.harness.crashpoints import reached
from guard.notify.fanout import ChannelNotifier
from guard.notify.outbox import queue
from guard.notify.runner import ChannelRunner
from guard.ports.running import HealthSource
from guard.store.db import Database

REPORT_JOB = "report:daily"


class Gateway(ABC):
    name: ClassVar[str]
    """The channel (its ``CHANNELS`` key, the ``channel`` of its outbox rows)."""
    charts: ClassVar[bool] = True
    """Whether its daily report carries the chart (``report_calls`` gets the PNG)."""

    def __init__(
        self,
        settings: Settings,
        db: Database,
        runtime: HealthSource | None,
        chat_id: str,
        notifier: ChannelNotifier,
    ) -> None:
        self.settings = settings
        self.db = db
        self.runtime = runtime
        self.chat_id = chat_id
        self.notifier = notifier
        self.stopping = asyncio.Event()
        self.ready = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        report = settings.report
        self.scheduler = AsyncIOScheduler(timezone=report.timezone)
        self.report_trigger = CronTrigger.from_crontab(report.cron, timezone=report.timezone)

    # -- what each channel does its own way -----------------------------------------------------

    @abstractmethod
    async def connect(self) -> None:
        """Reach the service, ``run_outbox``, set ``ready`` and receive until ``stopping``."""

    @abstractmethod
    def report_calls(self, chat: str, text: str, png: bytes) -> list[dict[str, Any]]:
        """The outbox calls of a daily report (``text`` in the chat HTML) in ``chat``."""

    async def closing(self) -> None:
        """What must close before the background tasks can end (a receiving connection);
        none by default."""
        return

    async def close(self) -> None:
        """Release the service's client once everything has stopped; none by default."""
        return

    # -- the shared lifecycle -------------------------------------------------------------------

    async def start(self) -> None:
        """Schedule the daily report and connect in the background (never raises for the
        channel being unreachable)."""
        self.scheduler.add_job(
            self.send_report,
            self.report_trigger,
            id=REPORT_JOB,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=3600,
        )
        self.scheduler.start()
        self.spawn(self.connect(), "connect")

    async def stop(self) -> None:
        self.stopping.set()
        await self.closing()
        with contextlib.suppress(Exception):
            self.scheduler.shutdown(wait=False)
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.close()

    def spawn(self, work: Coroutine[Any, Any, None], what: str) -> None:
        """Run ``work`` in the background until ``stop`` (the task named ``<channel>:what``)."""
        self._tasks.append(asyncio.create_task(work, name=f"{self.name}:{what}"))

    async def run_outbox(self, runner: ChannelRunner) -> None:
        """Settle what a crash left in flight, then send and sync until ``stop``."""
        await runner.recover()
        runner.run(self.stopping)
        self.spawn(runner.wait(), "channel")

    async def pause(self, seconds: float) -> None:
        """Wait ``seconds``, or less if Guard stops meanwhile."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), seconds)

    async def send_report(
        self,
        chat_id: str | None = None,
        day: date | None = None,
        also: Callable[[Session], object] | None = None,
    ) -> None:
        """Render the report from the store and queue it (today's, in the default chat, unless
        told); ``also`` runs in the transaction that queues it (all its calls, or none)."""
        from guard.reports import daily
        from guard.reports.chart import incidents_per_hour

        report = await asyncio.to_thread(daily.gather, self.db, self.settings, day)
        text = daily.render(report, self.settings)
        png = await asyncio.to_thread(incidents_per_hour, report.per_hour) if self.charts else b""
        calls = self.report_calls(chat_id or self.chat_id, text, png)
        await asyncio.to_thread(queue.enqueue_all, self.db, self.name, calls, also)
        reached("report.sending")
        logger.info("daily report queued for {} ({} incidents opened)", self.name, report.opened)
