"""The console's inbound adapter: a line an operator types at Guard's console, as a neutral
``guard.notify.inbound.Inbound`` event for the answers policy (``guard.notify.answers``).

Each console message has an id (``ConsoleChannel``: an edit names it); the operator answers with
``press MESSAGE_ID DATA`` (a button's data), ``reply MESSAGE_ID TEXT`` (a reply to a message:
a fix, or ``#ID FIX`` on a grouped one), a slash command (``/incidents``), or any other text.
A press's immediate answer is a log line. The sender is the operator's name (``console:NAME``
at the gate). Tested by tests/notify/test_inbound_contract.py.
"""

from __future__ import annotations

from typing import Any

from loguru import logger

from guard.notify.console.channel import CHAT
from guard.notify.inbound import Inbound

NAME = CHAT


async def _say(text: str, alert: bool) -> None:
    logger.warning("{}{}", "⚠ " if alert else "", text)


def event(line: str, user: str, update_id: int) -> Inbound:
    """What the operator's ``line`` says they did."""
    words = line.split(None, 2)
    head = words[0].lower() if words else ""
    common: dict[str, Any] = {"channel": NAME, "update_id": update_id, "chat": CHAT, "user": user}
    if head in ("press", "reply") and len(words) == 3 and words[1].isdigit():
        message_id = words[1]
        if head == "press":
            return Inbound(
                kind="press", message_id=message_id, data=words[2], answer=_say, **common
            )
        return Inbound(kind="text", text=words[2], reply_to=message_id, **common)
    if line.startswith("/"):
        return Inbound(kind="command", text=line, **common)
    return Inbound(kind="text", text=line, **common)
