"""The daily report, queued for the chat channels that take it (``guard report daily``)."""

from __future__ import annotations

from guard.config import Settings
from guard.domain.exceptions import ConfigError
from guard.store.db import Database


def queue_daily_report(settings: Settings, db: Database, text: str, png: bytes) -> str:
    """Queue the rendered report and its chart (both, or neither) in every configured chat
    channel; return what to tell the user. ``ConfigError`` names the settings if none is."""
    if not settings.telegram.configured:
        raise ConfigError(
            "Telegram is not configured (telegram.bot_token and telegram.chat_id); use --print"
        )
    from guard.notify.telegram import outbox

    outbox.enqueue_all(db, outbox.report_calls(str(settings.telegram.chat_id), text, png))
    return "report queued for Telegram; `guard run` sends it"
