"""``MatrixNotifier``: the outbox's ``ChannelNotifier`` for the Matrix rooms, in HTML.

``matrix.room_id`` is the default room; with a ``Router`` an incident's question goes to the
rooms its route names (``routes[].chats: {matrix: "!room"}``), a room per route, each with its
own outbox rows. Tested by tests/matrix/test_matrix_run.py."""

from __future__ import annotations

from guard.config import Settings
from guard.notify.fanout import ChannelNotifier
from guard.notify.matrix.channel import NAME
from guard.notify.matrix.markup import MatrixMarkup
from guard.notify.routing import Router, chats_for
from guard.store.db import Database


class MatrixNotifier(ChannelNotifier):
    def __init__(self, settings: Settings, db: Database, router: Router | None = None) -> None:
        assert settings.matrix.room_id is not None
        rooms = chats_for(router, db, NAME)
        super().__init__(db, NAME, settings.matrix.room_id, MatrixMarkup(), rooms)
