"""What Guard posts in a Matrix room: an ``m.room.message`` whose ``formatted_body`` is the
chat HTML (``guard.notify.html``; ``org.matrix.custom.html``, a subset Matrix clients render),
its ``body`` the same as plain text, and its buttons written under it and kept in the content
(``buttons.BUTTONS``); an edit is an ``m.replace`` of the message with the new content.

Tested by tests/matrix/test_content.py.
"""

from __future__ import annotations

import re
from html import unescape
from typing import Any

from guard.notify.matrix import buttons as kb

HTML = "org.matrix.custom.html"
_TAG = re.compile(r"<[^<>]+>")
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)


def plain(html_text: str) -> str:
    """The HTML as plain text (the ``body`` every client can show)."""
    return unescape(_TAG.sub("", _BREAK.sub("\n", html_text)))


def message(
    html_text: str, rows: list[list[tuple[str, str]]], notice: bool = False
) -> dict[str, Any]:
    """A message's content: the text, and its buttons written under it and kept in it."""
    shown = kb.buttons(rows)
    under_plain, under_html = kb.lines(shown)
    html_body = html_text.replace("\n", "<br>")
    content: dict[str, Any] = {
        "msgtype": "m.notice" if notice else "m.text",
        "body": plain(html_text) + (f"\n\n{under_plain}" if under_plain else ""),
        "format": HTML,
        "formatted_body": html_body + (f"<br><br>{under_html}" if under_html else ""),
    }
    if shown:
        content[kb.BUTTONS] = [b.as_json() for b in shown]
    return content


def reply(content: dict[str, Any], event_id: str) -> dict[str, Any]:
    """``content`` as a reply to ``event_id``."""
    return {**content, "m.relates_to": {"m.in_reply_to": {"event_id": event_id}}}


def edit(new: dict[str, Any], event_id: str) -> dict[str, Any]:
    """An edit (``m.replace``) of ``event_id`` to ``new``; clients without edits show the
    fallback, marked with ``*``."""
    fallback = {k: v for k, v in new.items() if k != kb.BUTTONS}
    fallback["body"] = f"* {new['body']}"
    fallback["formatted_body"] = f"* {new['formatted_body']}"
    return {
        **fallback,
        "m.new_content": new,
        "m.relates_to": {"rel_type": "m.replace", "event_id": event_id},
    }


def same(content: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """Whether an event's content shows exactly ``wanted`` (its text and its buttons)."""
    fields = ("msgtype", "body", "formatted_body", kb.BUTTONS)
    return all(content.get(f) == wanted.get(f) for f in fields)
