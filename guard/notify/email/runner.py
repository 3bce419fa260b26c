"""What ``guard run`` keeps going for email: its outbox worker and sync (``ChannelRunner``),
and the daily report on ``report.cron``. Nothing is received: questions are answered in the
web console. The server being down at start is no error; the outbox keeps the mail.
Tested by tests/notify/email/test_email_run.py."""

from __future__ import annotations

import asyncio
import contextlib

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger
from loguru import logger

from guard.config import Settings
from guard.harness.crashpoints import reached
from guard.notify.email import outbox
from guard.notify.email.channel import EmailChannel
from guard.notify.email.notifier import EmailNotifier
from guard.notify.runner import ChannelRunner
from guard.store.db import Database


class EmailRunner:
    def __init__(self, settings: Settings, db: Database) -> None:
        self.settings = settings
        self.db = db
        channel = EmailChannel(settings.email, db)
        notifier = EmailNotifier(settings, db)
        self.runner = ChannelRunner(channel, db, notifier, group_wait=settings.email.group_wait)
        self.stopping = asyncio.Event()
        self.scheduler = AsyncIOScheduler(timezone=settings.report.timezone)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.scheduler.add_job(
            self.send_report,
            CronTrigger.from_crontab(self.settings.report.cron, self.settings.report.timezone),
            id="report:daily:email",
            coalesce=True,
            max_instances=1,
            misfire_grace_time=3600,
        )
        self.scheduler.start()
        self._task = asyncio.create_task(self.runner.start(self.stopping), name="email:start")

    async def stop(self) -> None:
        self.stopping.set()
        with contextlib.suppress(Exception):
            self.scheduler.shutdown(wait=False)
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
        await self.runner.wait()

    async def send_report(self) -> None:
        """Render today's report and queue it as one mail, the chart attached."""
        from guard.reports import daily
        from guard.reports.chart import incidents_per_hour

        report = await asyncio.to_thread(daily.gather, self.db, self.settings, None)
        text = daily.render(report, self.settings)
        png = await asyncio.to_thread(incidents_per_hour, report.per_hour)
        await asyncio.to_thread(outbox.queue_report, self.settings, self.db, text, png)
        reached("report.sending")
        logger.info("daily report queued for email ({} incidents opened)", report.opened)
