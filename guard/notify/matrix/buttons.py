"""Buttons on Matrix, which has none: each of a message's buttons is a reaction key and a
one-time code, written under the message and kept in its content (``BUTTONS``), so a reaction
or a reply carrying the code is the press of that button.

A button's reaction key comes from its label (``▶`` runs: ✅, ``✖`` denies: ❌, and so on)
when no other button of the message has the same key (a grouped message repeats them: its
buttons are answered by code). Its code is derived from its data (the approval id, itself
random), so it is spent with the approval: a code replayed is refused like a button pressed
twice. The homeserver keeps what the bot posted, so the adapter reads a message's buttons from
the bot's own event (its latest edit), never from what a sender claims.

Tested by tests/matrix/test_buttons.py.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from html import escape
from typing import Any

BUTTONS = "org.guard.buttons"
"""The content field holding a message's buttons: ``[{label, data, key, code}]``."""

KEYS = {"▶": "✅", "✖": "❌", "✍": "✍️", "🔕": "🔕", "✋": "✋", "Run": "✅", "Cancel": "❌"}
"""A label's first word (or symbol) -> the reaction that presses it."""

_CODE = re.compile(r"\b[A-Z2-7]{6}\b")
_VARIATION = "\ufe0f"


@dataclass(frozen=True)
class Button:
    label: str
    data: str
    key: str
    code: str

    def as_json(self) -> dict[str, str]:
        return {"label": self.label, "data": self.data, "key": self.key, "code": self.code}


def code(data: str) -> str:
    """The one-time code of a button: six characters that only its data gives."""
    digest = hashlib.sha256(f"guard-button:{data}".encode()).digest()
    return base64.b32encode(digest)[:6].decode()


def _key(label: str) -> str:
    words = label.split()
    return KEYS.get(words[0], "") if words else ""


def buttons(rows: list[list[tuple[str, str]]]) -> list[Button]:
    """A message's buttons, in order, with their reaction keys and codes."""
    flat = [(label, data) for row in rows for label, data in row]
    keys = [_key(label) for label, _ in flat]
    twice = {k for k, n in Counter(keys).items() if n > 1}
    return [
        Button(label, data, "" if k in twice else k, code(data))
        for (label, data), k in zip(flat, keys, strict=True)
    ]


def lines(shown: list[Button]) -> tuple[str, str]:
    """What is written under the message: plain text, and HTML."""
    if not shown:
        return "", ""
    plain, html = [], []
    for b in shown:
        react = f"react {b.key} or " if b.key else ""
        plain.append(f"{b.label}: {react}reply {b.code}")
        html.append(f"{escape(b.label)}: {react}reply <code>{b.code}</code>")
    head = "To answer, react to this message or reply to it with a code:"
    return "\n".join([head, *plain]), "<br>".join([escape(head), *html])


def stored(content: dict[str, Any]) -> list[Button]:
    """The buttons a message's content holds (its latest edit's, ``m.new_content``)."""
    got = content.get("m.new_content", content).get(BUTTONS)
    if not isinstance(got, list):
        return []
    found = []
    for b in got:
        if isinstance(b, dict) and all(isinstance(b.get(f), str) for f in ("label", "data")):
            found.append(Button(b["label"], b["data"], str(b.get("key", "")), str(b.get("code"))))
    return found


def by_key(shown: list[Button], key: str) -> str:
    """The data of the button reaction ``key`` presses ("" for none: refused as forged)."""
    key = key.replace(_VARIATION, "")
    return next((b.data for b in shown if b.key and b.key.replace(_VARIATION, "") == key), "")


def by_code(shown: list[Button], text: str) -> str | None:
    """The data of the button whose code ``text`` carries (None: none, a plain reply)."""
    said = set(_CODE.findall(text)) if len(text) <= 64 else set()
    return next((b.data for b in shown if b.code in said), None)
