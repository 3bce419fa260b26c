"""What ``guard run`` keeps going for email: its outbox worker and sync, and the daily report
on ``report.cron``, as every channel (``guard.notify.gateway``). Nothing is received: questions
are answered in the web console. The server being down at start is no error; the outbox keeps
the mail. Tested by tests/notify/email/test_email_run.py."""

from __future__ import annotations

from typing import Any

from guard.config import Settings
from guard.notify.email import outbox
from guard.notify.email.channel import NAME, EmailChannel
from guard.notify.email.notifier import EmailNotifier
from guard.notify.gateway import Gateway
from guard.notify.runner import ChannelRunner
from guard.store.db import Database


class EmailRunner(Gateway):
    name = NAME

    def __init__(self, settings: Settings, db: Database) -> None:
        assert settings.email.to is not None
        super().__init__(settings, db, None, settings.email.to, EmailNotifier(settings, db))
        channel = EmailChannel(settings.email, db)
        self.runner = ChannelRunner(
            channel, db, self.notifier, group_wait=settings.email.group_wait
        )

    async def connect(self) -> None:
        await self.run_outbox(self.runner)
        self.ready.set()

    def report_calls(self, chat: str, text: str, png: bytes) -> list[dict[str, Any]]:
        return outbox.report_calls(self.settings, chat, text, png)
