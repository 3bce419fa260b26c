"""The console: Guard's log as a chat channel of the outbox (docs/CHANNELS.md, The console).

``ConsoleChannel`` writes posts and edits to the log and to conversation memory,
``ConsoleMarkup`` renders questions with the ``guard approve|deny|reply`` commands that answer
them, ``ConsoleNotifier`` queues them and ``ConsoleRunner`` is its worker in ``guard run``.
"""

from __future__ import annotations

from guard.notify.console.channel import CHAT, ConsoleChannel
from guard.notify.console.markup import ConsoleMarkup, option_lines
from guard.notify.console.notifier import ConsoleNotifier, ConsoleRunner

__all__ = [
    "CHAT",
    "ConsoleChannel",
    "ConsoleMarkup",
    "ConsoleNotifier",
    "ConsoleRunner",
    "option_lines",
]
