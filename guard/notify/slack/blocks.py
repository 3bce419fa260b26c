"""A message as Block Kit: its mrkdwn text in sections of at most 3,000 characters (cut on
lines, a code block closed at a section's end and opened again in the next), then its buttons,
a row an ``actions`` block (25 buttons at most in one). Each button's ``value`` is the opaque
approval id (or ``fix:ID``): the approval binds the incident, the digest of the command shown
and an expiry, and a press is checked against Guard's own record of the message, never the
button's claim. Labels are cut to Slack's 75 characters; no message has over 50 blocks.

Tested by tests/notify/test_slack_channel.py.
"""

from __future__ import annotations

from typing import Any

from guard.notify.channel import Buttons
from guard.notify.slack.mrkdwn import FENCE

SECTION = 3000
BLOCKS = 50
ROW = 25
LABEL = 75


def sections(text: str) -> list[str]:
    """``text`` in pieces that each fit a section, code blocks balanced in each."""
    pieces: list[str] = []
    current = ""
    room = SECTION - 2 * len(FENCE) - 1
    for line in text.split("\n"):
        while len(line) > room:
            pieces, current = _add(pieces, current, line[:room])
            line = line[room:]
        pieces, current = _add(pieces, current, line)
    if current:
        pieces.append(current)
    balanced: list[str] = []
    open_block = False
    for piece in pieces:
        if open_block:
            piece = FENCE + piece
        open_block = piece.count(FENCE) % 2 == 1
        balanced.append(piece + FENCE if open_block else piece)
    return [p for p in balanced if p.strip()]


def _add(pieces: list[str], current: str, line: str) -> tuple[list[str], str]:
    joined = f"{current}\n{line}" if current else line
    if len(joined) <= SECTION - 2 * len(FENCE) - 1:
        return pieces, joined
    return [*pieces, current], line


def _button(label: str, value: str, action_id: str) -> dict[str, Any]:
    button: dict[str, Any] = {
        "type": "button",
        "text": {"type": "plain_text", "text": label[:LABEL], "emoji": True},
        "value": value,
        "action_id": action_id,
    }
    if label.startswith("▶"):
        button["style"] = "primary"
    elif label.startswith("✖"):
        button["style"] = "danger"
    return button


def layout(text: str, buttons: Buttons) -> list[dict[str, Any]]:
    """The blocks of a message with ``text`` and ``buttons``."""
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": piece}} for piece in sections(text)
    ]
    rows = [
        [_button(label, value, f"guard-{r}-{c}") for c, (label, value) in enumerate(row)]
        for r, row in enumerate(buttons)
    ]
    if len(blocks) + len(rows) > BLOCKS:  # many rows: packed, 25 buttons a block
        flat = [b for row in rows for b in row]
        rows = [flat[i : i + ROW] for i in range(0, len(flat), ROW)]
    for row in rows:
        for i in range(0, len(row), ROW):
            blocks.append({"type": "actions", "elements": row[i : i + ROW]})
    return blocks[:BLOCKS]


def values(blocks: list[dict[str, Any]] | None) -> list[str]:
    """The buttons' values in a message's blocks (how ``find`` recognises a message)."""
    return [
        str(el.get("value"))
        for block in blocks or []
        if block.get("type") == "actions"
        for el in block.get("elements", [])
    ]
