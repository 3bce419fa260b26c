"""Wakes a channel's send worker when this process commits a row for it, so the worker need not
look at its table often (``worker.IDLE``).

Any insert of an ``OutboxMessage`` counts, whichever code queued it (a session event, not a call
each queuer must remember); the wake comes after the commit, when the worker can read the row.
Rows another process queued (a ``guard`` command, a replica) are found by the worker's own
look every ``worker.IDLE``. Tested by ``tests/notify/test_outbox_wakeup.py``.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import Session

from guard.store.models import OutboxMessage

_QUEUED = "guard.outbox.queued"  # session.info key: the channels this transaction queued for
_lock = threading.Lock()
_wakers: dict[str, list[Callable[[], None]]] = defaultdict(list)


def subscribe(channel: str, wake: Callable[[], None]) -> Callable[[], None]:
    """Call ``wake`` (from the committing thread) after each commit in this process that queues
    a row for ``channel``; returns the function that stops it."""
    with _lock:
        _wakers[channel].append(wake)

    def unsubscribe() -> None:
        with _lock:
            if wake in _wakers[channel]:
                _wakers[channel].remove(wake)

    return unsubscribe


@event.listens_for(Session, "before_flush")
def _note(session: Session, _context: Any, _instances: Any) -> None:
    channels = {row.channel for row in session.new if isinstance(row, OutboxMessage)}
    if channels:
        session.info.setdefault(_QUEUED, set()).update(channels)


@event.listens_for(Session, "after_commit")
def _wake(session: Session) -> None:
    channels = session.info.pop(_QUEUED, None)
    if not channels:
        return
    with _lock:
        wakers = [wake for channel in channels for wake in _wakers.get(channel, ())]
    for wake in wakers:
        wake()


@event.listens_for(Session, "after_rollback")
def _forget(session: Session) -> None:
    session.info.pop(_QUEUED, None)
