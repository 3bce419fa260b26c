"""``MatrixNotifier``: the outbox's ``ChannelNotifier`` for the Matrix room, in HTML.

``matrix.room_id`` is the room; a route may name another room for Matrix once routes name chats
per channel (today ``routes[].telegram_chat`` names Telegram's). Tested by
tests/matrix/test_matrix_run.py."""

from __future__ import annotations

from guard.config import Settings
from guard.notify.fanout import ChannelNotifier
from guard.notify.matrix.channel import NAME
from guard.notify.matrix.markup import MatrixMarkup
from guard.store.db import Database


class MatrixNotifier(ChannelNotifier):
    def __init__(self, settings: Settings, db: Database, router: object = None) -> None:
        assert settings.matrix.room_id is not None
        super().__init__(db, NAME, settings.matrix.room_id, MatrixMarkup())
