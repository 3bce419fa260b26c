"""The Telegram gateway inside ``guard run``: a python-telegram-bot Application and its sync
loop; the outbox worker and the daily report's schedule are every channel's (``Gateway``).

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

import contextlib
import hashlib
from typing import Any

from loguru import logger
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
from guard.notify.answers import senders
from guard.notify.answers.slash import COMMANDS
from guard.notify.gateway import Gateway
from guard.notify.runner import ChannelRunner
from guard.notify.running_gate import gate_from_settings
from guard.notify.telegram import handlers, logbridge, outbox
from guard.notify.telegram.channel import NAME, TelegramChannel
from guard.notify.telegram.notifier import TelegramNotifier
from guard.notify.telegram.senders import Authoriser
from guard.notify.telegram.sync import Sync
from guard.ports.running import HealthSource
from guard.store.db import Database

ALLOWED_UPDATES = ["message", "callback_query"]


class TelegramGateway(Gateway):
    name = NAME

    def __init__(
        self, settings: Settings, db: Database, runtime: HealthSource | None = None
    ) -> None:
        tg = settings.telegram
        assert tg.bot_token is not None and tg.chat_id is not None
        super().__init__(settings, db, runtime, str(tg.chat_id), TelegramNotifier(settings, db))
        self.auth: senders.Authoriser = Authoriser(
            tg, db, gate_from_settings(settings, db)
        )  # the gate every entry uses
        self.app = self._build()
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

    async def connect(self) -> None:
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
                await self.pause(wait)
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
        await self.run_outbox(runner)  # before any update: a reply may quote a message in flight
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
        self.ready.set()
        logger.info("telegram gateway connected as @{} ({})", self.app.bot.username, tg.mode)

    def _polling_error(self, exc: TelegramError) -> None:
        logger.warning("telegram polling: {}", exc)

    async def close(self) -> None:
        if self.ready.is_set():
            assert self.app.updater is not None
            with contextlib.suppress(Exception):
                await self.app.updater.stop()
            with contextlib.suppress(Exception):
                await self.app.stop()
        with contextlib.suppress(Exception):
            await self.app.shutdown()

    def report_calls(self, chat: str, text: str, png: bytes) -> list[dict[str, Any]]:
        return outbox.report_calls(chat, text, png)
