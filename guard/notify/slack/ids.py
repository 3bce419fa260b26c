"""Slack's message ids are the ``ts`` strings (``1733472000.123456``: seconds and a sequence,
increasing in a channel); the store keeps them as one number (seconds * 10**6 + the six
digits), which keeps their order, so the outbox's floor and top work unchanged.

Tested by tests/notify/test_slack_channel.py.
"""

from __future__ import annotations

MICRO = 1_000_000


def message_id(ts: str) -> int:
    """A ``ts`` as the store keeps it."""
    seconds, _, fraction = ts.partition(".")
    return int(seconds) * MICRO + int((fraction or "0").ljust(6, "0")[:6])


def ts_of(message_id: int) -> str:
    """The ``ts`` of a stored message id."""
    return f"{message_id // MICRO}.{message_id % MICRO:06d}"
