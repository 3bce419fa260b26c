"""Email's rows in the durable outbox: the daily report is one mail, its text with a link to
the console and the chart attached. Tested by tests/notify/email/test_email_channel.py."""

from __future__ import annotations

from typing import Any

from guard.config import Settings
from guard.notify.email.channel import NAME
from guard.notify.outbox import queue
from guard.store.db import Database


def report_text(settings: Settings, text: str) -> str:
    """The report (rendered for chats: its HTML tags go), and where to look further (the
    console, or the CLI)."""
    from guard.reports.daily import to_plain

    where = (
        f"Console: {settings.public_url}/"
        if settings.public_url
        else "Full report: guard report daily --print"
    )
    return f"{to_plain(text)}\n\n{where}"


def report_calls(settings: Settings, to: str, text: str, png: bytes) -> list[dict[str, Any]]:
    """The daily report to ``to``: one mail, the chart attached."""
    return [
        {
            "method": "photo",
            "chat_id": to,
            "role": "report",
            "text": report_text(settings, text),
            "photo": png,
        }
    ]


def queue_report(settings: Settings, db: Database, text: str, png: bytes) -> None:
    """Queue the report to ``email.to``."""
    assert settings.email.to is not None
    queue.enqueue_all(db, NAME, report_calls(settings, settings.email.to, text, png))
