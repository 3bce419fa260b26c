"""Telegram's ``Markup``: its HTML parse mode is the chat HTML, as ``guard.notify.html``
renders it (the question, the closing edit, the grouped message's lines)."""

from __future__ import annotations

from guard.notify.html import LINE_CHARS, HtmlMarkup, closed_line, member_line, render

__all__ = ["LINE_CHARS", "HtmlMarkup", "closed_line", "member_line", "render"]
