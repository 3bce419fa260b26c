"""Telegram's HTML parse mode is the chat HTML (``guard.notify.html``): Telegram refuses a
message over 4096 characters after entity parsing (``LIMIT``) and a caption over 1024
(``CAPTION_LIMIT``); callback data is the button's data."""

from __future__ import annotations

from guard.notify.html import (
    LIMIT,
    REPORT_POINTER,
    RUN_COMMAND,
    cut,
    esc,
    pointer,
    render_request,
)

CAPTION_LIMIT = 1024

__all__ = [
    "CAPTION_LIMIT",
    "LIMIT",
    "REPORT_POINTER",
    "RUN_COMMAND",
    "cut",
    "esc",
    "pointer",
    "render_request",
]
