"""The daily report, queued for the chat channels that take it (``guard report daily``)."""

from __future__ import annotations

from guard.config import Settings
from guard.domain.exceptions import ConfigError
from guard.store.db import Database


def queue_daily_report(settings: Settings, db: Database, text: str, png: bytes) -> str:
    """Queue the rendered report and its chart (both, or neither) in every configured chat
    channel; return what to tell the user. ``ConfigError`` names the settings if none is."""
    from guard.notify.kinds import CHANNELS, configured

    names = configured(settings)
    if not names:
        sections = ", ".join(CHANNELS)
        raise ConfigError(f"no chat channel is configured (one of: {sections}); use --print")
    return "; ".join(CHANNELS[name].plug().report(settings, db, text, png) for name in names)
