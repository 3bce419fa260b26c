"""The Telegram gateway inside ``guard run``: a python-telegram-bot Application, the outbox
worker, a sync loop, and the daily report's schedule.

- Updates arrive by long polling (default) or a webhook. Every update is recorded in
  conversation memory first, then authorised by ``from.id`` (see ``auth``); a refusal is
  answered and audited, and nothing else happens.
- A button press spends its approval and becomes a ``HumanCommand`` (approve, deny, mute) for
  the agent, exactly as ``guard approve|deny`` would; a reply to an incident message (or
  ``/fix ID COMMAND``) becomes a ``reply`` command: the learning loop.
- Everything Guard says goes through the durable outbox (rate limited by PTB's
  ``AIORateLimiter``; 429s and outages handled by the worker).
- The sync loop takes the buttons off messages whose question is over (resolved, answered
  elsewhere, expired) and posts the outcome of commands nobody else reports.
- Telegram being unreachable at start is not an error: the gateway keeps retrying in the
  background while monitoring goes on, and the outbox fills up meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Callable
from datetime import date
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger
from loguru import logger
from sqlmodel import Session
from telegram import Update
from telegram.error import RetryAfter, TelegramError
from telegram.ext import (
    AIORateLimiter,
    Application,
    CallbackQueryHandler,
    CommandHandler,
    MessageHandler,
    TypeHandler,
    filters,
)

from guard.config import Settings
from guard.harness.crashpoints import reached
from guard.notify.answers import senders
from guard.notify.answers.slash import COMMANDS
from guard.notify.fanout import ChannelNotifier
from guard.notify.runner import ChannelRunner
from guard.notify.running_gate import gate_from_settings
from guard.notify.telegram import handlers, logbridge, outbox
from guard.notify.telegram.channel import TelegramChannel
from guard.notify.telegram.notifier import TelegramNotifier
from guard.notify.telegram.senders import Authoriser
from guard.notify.telegram.sync import Sync
from guard.ports.running import HealthSource
from guard.store.db import Database

ALLOWED_UPDATES = ["message", "callback_query"]


class TelegramGateway:
    def __init__(
        self, settings: Settings, db: Database, runtime: HealthSource | None = None
    ) -> None:
        tg = settings.telegram
        assert tg.bot_token is not None and tg.chat_id is not None
        self.settings = settings
        self.db = db
        self.runtime = runtime
        self.chat_id = str(tg.chat_id)
        self.auth: senders.Authoriser = Authoriser(
            tg, db, gate_from_settings(settings, db)
        )  # the gate every entry uses
        self.notifier: ChannelNotifier = TelegramNotifier(settings, db)
        self.stopping = asyncio.Event()
        self.ready = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.app = self._build()
        self.scheduler = AsyncIOScheduler(timezone=settings.report.timezone)
        self.report_trigger = CronTrigger.from_crontab(
            settings.report.cron, timezone=settings.report.timezone
        )
        self.sync = Sync(self)

    def _build(self) -> Application[Any, Any, Any, Any, Any, Any]:
        tg = self.settings.telegram
        assert tg.bot_token is not None
        token = tg.bot_token.get_secret_value()
        logbridge.install([token, *self.settings.secret_values()])
        base = tg.api_base_url.rstrip("/")
        app = (
            Application.builder()
            .token(token)
            .base_url(f"{base}/bot")
            .base_file_url(f"{base}/file/bot")
            .rate_limiter(AIORateLimiter(max_retries=0))
            .get_updates_read_timeout(tg.poll_timeout + 10)
            .build()
        )
        h = handlers.Handlers(self)
        app.add_handler(TypeHandler(Update, h.remember), group=-1)
        app.add_handler(CallbackQueryHandler(h.on_callback))
        for name in COMMANDS:
            app.add_handler(CommandHandler(name, h.on_command))
        app.add_handler(MessageHandler(filters.TEXT & ~filters.COMMAND, h.on_text))
        app.add_error_handler(h.on_error)
        return app

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Schedule the report and connect in the background (never raises for Telegram)."""
        self.scheduler.add_job(
            self.send_report,
            self.report_trigger,
            id="report:daily",
            coalesce=True,
            max_instances=1,
            misfire_grace_time=3600,
        )
        self.scheduler.start()
        self._tasks.append(asyncio.create_task(self._connect(), name="telegram:connect"))

    async def _connect(self) -> None:
        delay = 1.0
        while not self.stopping.is_set():
            try:
                await self.app.initialize()
                break
            except (TelegramError, OSError) as exc:
                wait = float(
                    exc.retry_after
                    if isinstance(exc, RetryAfter)  # type: ignore[arg-type]
                    else delay
                )
                logger.warning("telegram not reachable yet ({}); retrying in {:g}s", exc, wait)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.stopping.wait(), wait)
                delay = min(delay * 2, 10.0)
        if self.stopping.is_set():
            return
        try:
            await self._serve()
        except Exception as exc:  # e.g. webhook mode without the webhooks extra
            logger.error(
                "telegram gateway could not start: {} (monitoring goes on; for "
                "webhook mode install python-telegram-bot[webhooks])",
                exc,
            )

    async def _serve(self) -> None:
        await self.app.start()
        assert self.app.updater is not None
        tg = self.settings.telegram
        runner = ChannelRunner(
            TelegramChannel(self.app.bot), self.db, self.notifier, group_wait=tg.group_wait
        )
        runner.sync = self.sync
        await runner.recover()  # before any update: a reply may quote a message in flight
        if tg.mode == "webhook":
            assert tg.bot_token is not None
            secret = hashlib.sha256(tg.bot_token.get_secret_value().encode()).hexdigest()[:32]
            await self.app.updater.start_webhook(
                listen=tg.listen,
                port=tg.port,
                url_path="telegram",
                webhook_url=tg.webhook_url,
                secret_token=secret,
                allowed_updates=ALLOWED_UPDATES,
            )
        else:
            await self.app.updater.start_polling(
                timeout=int(tg.poll_timeout),
                allowed_updates=ALLOWED_UPDATES,
                error_callback=self._polling_error,
            )
        runner.run(self.stopping)
        self._tasks.append(asyncio.create_task(runner.wait(), name="telegram:channel"))
        self.ready.set()
        logger.info("telegram gateway connected as @{} ({})", self.app.bot.username, tg.mode)

    def _polling_error(self, exc: TelegramError) -> None:
        logger.warning("telegram polling: {}", exc)

    async def stop(self) -> None:
        self.stopping.set()
        with contextlib.suppress(Exception):
            self.scheduler.shutdown(wait=False)
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.ready.is_set():
            assert self.app.updater is not None
            with contextlib.suppress(Exception):
                await self.app.updater.stop()
            with contextlib.suppress(Exception):
                await self.app.stop()
        with contextlib.suppress(Exception):
            await self.app.shutdown()

    # -- the daily report -----------------------------------------------------------------------

    async def send_report(
        self,
        chat_id: str | None = None,
        day: date | None = None,
        also: Callable[[Session], object] | None = None,
    ) -> None:
        """Render the report from the store and queue it (text, then the chart); ``also`` runs
        in the transaction that queues them."""
        from guard.reports import daily
        from guard.reports.chart import incidents_per_hour

        chat = chat_id or self.chat_id
        report = await asyncio.to_thread(daily.gather, self.db, self.settings, day)
        text = daily.render(report, self.settings)
        png = await asyncio.to_thread(incidents_per_hour, report.per_hour)
        await asyncio.to_thread(  # the text and its chart: both queued, or neither
            outbox.enqueue_all, self.db, outbox.report_calls(chat, text, png), also
        )
        reached("report.sending")
        logger.info("daily report queued for telegram ({} incidents opened)", report.opened)
