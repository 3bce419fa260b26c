"""The Matrix gateway inside ``guard run``: joins the room and syncs its events into the
channel-neutral answers (``guard.notify.answers``); the outbox worker and sync for the room and
the daily report on ``report.cron`` are every channel's (``guard.notify.gateway``).

- Sync is ``/sync`` long polling from a stored ``next_batch`` (the state table, ``SYNC_KEY``),
  written after each batch is handled: a restart goes on from there and does not replay old
  events; an event handled before a crash cut the write is stored as handled and skipped. The
  very first sync only takes the position: what the room said before Guard came is not acted
  on.
- A reaction or a reply is matched with the buttons of the bot's message it answers, read from
  the homeserver (the message, then its latest ``m.replace`` by the bot): the store's record of
  the message and the gate still decide (``Answers``).
- A press is answered at once with a notice in reply to the pressed message (Matrix has no
  toast); it is not a row of the outbox, as no channel's immediate answer to a press is.
- A room per route: the bot joins its default room and every room ``routes[].chats.matrix``
  names, and answers in the room an event came from.
- The homeserver unreachable at start is not an error: the gateway retries in the background
  while monitoring goes on, and the outbox fills up meanwhile.

Tested by tests/matrix/test_matrix_gateway.py and tests/matrix/test_matrix_run.py (against a
real Synapse).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from loguru import logger
from nio import (
    AsyncClient,
    AsyncClientConfig,
    ErrorResponse,
    JoinResponse,
    RoomGetEventResponse,
    SyncResponse,
)
from nio.api import RelationshipType

from guard.config import Settings
from guard.notify.answers import senders
from guard.notify.answers.presses import Answers
from guard.notify.gateway import Gateway
from guard.notify.matrix import buttons as kb
from guard.notify.matrix import content
from guard.notify.matrix.channel import ANSWERED, NAME, MatrixChannel, errors
from guard.notify.matrix.markup import MatrixMarkup
from guard.notify.matrix.notifier import MatrixNotifier
from guard.notify.matrix.updates import MatrixUpdate, event, target
from guard.notify.routing import Router
from guard.notify.runner import ChannelRunner
from guard.notify.running_gate import gate_from_settings
from guard.ports.running import HealthSource
from guard.store.db import Database
from guard.store.state import get_state, put_state

SYNC_KEY = "matrix.sync"
TYPES = ["m.room.message", "m.reaction"]


def client(settings: Settings) -> AsyncClient:
    """A nio client for the bot's account, with nio's retries off (the outbox retries)."""
    mx = settings.matrix
    assert mx.homeserver and mx.user_id and mx.access_token is not None
    config = AsyncClientConfig(max_limit_exceeded=0, max_timeouts=0, request_timeout=30)
    c = AsyncClient(mx.homeserver.rstrip("/"), mx.user_id, config=config)
    c.access_token = mx.access_token.get_secret_value()
    c.user_id = mx.user_id
    return c


class MatrixGateway(Gateway):
    name = NAME

    def __init__(
        self, settings: Settings, db: Database, runtime: HealthSource | None = None
    ) -> None:
        mx = settings.matrix
        assert mx.room_id is not None
        notifier = MatrixNotifier(settings, db, Router(settings))
        super().__init__(settings, db, runtime, mx.room_id, notifier)
        routed = [room for route in settings.routes for room in route.chats_in(NAME)]
        self.rooms = list(dict.fromkeys([mx.room_id, *routed]))
        self.auth = senders.Authoriser(NAME, db, gate_from_settings(settings, db))
        self.client = client(settings)
        self.answers = Answers(self, NAME, MatrixMarkup())

    @property
    def filter(self) -> dict[str, Any]:
        """Only the rooms' messages and reactions."""
        none: dict[str, Any] = {"types": []}
        return {
            "presence": none,
            "account_data": none,
            "room": {
                "rooms": self.rooms,
                "timeline": {"types": TYPES, "limit": 100},
                "state": none,
                "ephemeral": none,
                "account_data": none,
            },
        }

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.client.close()

    def report_calls(self, chat: str, text: str, png: bytes) -> list[dict[str, Any]]:
        return report_calls(chat, text, png)

    async def connect(self) -> None:
        for room in self.rooms:
            await self._join(room)
        if self.stopping.is_set():
            return
        runner = ChannelRunner(
            MatrixChannel(self.client),
            self.db,
            self.notifier,
            group_wait=self.settings.matrix.group_wait,
        )
        await self.run_outbox(runner)  # before any event: a reply may quote a message in flight
        self.ready.set()
        logger.info(
            "matrix gateway connected as {} in {}", self.client.user_id, ", ".join(self.rooms)
        )
        await self._sync_forever()

    async def _join(self, room: str) -> None:
        """Join ``room``, retrying until the bot is invited (or Guard stops)."""
        delay = 1.0
        while not self.stopping.is_set():
            try:
                async with errors():
                    joined = await self.client.join(room)
                if isinstance(joined, JoinResponse):
                    return
                why = f"{getattr(joined, 'status_code', '')}: {getattr(joined, 'message', '')}"
            except Exception as exc:
                why = str(exc)
            logger.warning(
                "matrix: cannot join {} yet ({}); retrying in {:g}s (invite {} to the room)",
                room,
                why,
                delay,
                self.client.user_id,
            )
            await self.pause(delay)
            delay = min(delay * 2, 30.0)

    def _since(self) -> str | None:
        with self.db.session() as session:
            return get_state(session, SYNC_KEY).get(self.chat_id)

    def _store(self, next_batch: str) -> None:
        with self.db.session() as session:
            state = get_state(session, SYNC_KEY)
            put_state(session, SYNC_KEY, {**state, self.chat_id: next_batch})

    async def _sync_forever(self) -> None:
        since = await asyncio.to_thread(self._since)
        delay = 1.0
        timeout_ms = int(self.settings.matrix.sync_timeout * 1000)
        while not self.stopping.is_set():
            try:
                async with errors():
                    got = await self.client.sync(
                        timeout=timeout_ms if since else 0,
                        sync_filter=self.filter,
                        since=since,
                    )
            except Exception as exc:
                got = exc  # type: ignore[assignment]
            if not isinstance(got, SyncResponse):
                logger.warning("matrix sync: {}; retrying in {:g}s", got, delay)
                await self.pause(delay)
                delay = min(delay * 2, 30.0)
                continue
            delay = 1.0
            if since is not None:  # the first sync only takes the position
                for room_id, room in got.rooms.join.items():
                    if room_id in self.rooms:
                        for ev in room.timeline.events:
                            await self._handle(room_id, ev.source)
            since = got.next_batch
            await asyncio.to_thread(self._store, since)

    async def _handle(self, room: str, source: dict[str, Any]) -> None:
        try:
            on = target(source)
            shown = await self._buttons(room, on) if on is not None else []

            async def answer(text: str, alert: bool) -> None:
                await self._answer(room, on, text)

            update = MatrixUpdate(room, source, str(self.client.user_id), shown, answer)
            ev = event(update)
            if ev is None or not await self.answers.remember(ev):
                return
            act = {"press": self.answers.press, "command": self.answers.command}
            await act.get(ev.kind, self.answers.text)(ev)
        except Exception:
            logger.opt(exception=True).error("matrix: handling {} failed", source.get("event_id"))

    async def _buttons(self, room: str, event_id: str) -> list[kb.Button]:
        """The buttons of the bot's message ``event_id`` as it shows them now."""
        got = await self.client.room_get_event(room, event_id)
        if not isinstance(got, RoomGetEventResponse):
            return []
        source = got.event.source
        if source.get("sender") != self.client.user_id:
            return []  # not the bot's: it has no buttons, whatever it says
        latest = source.get("content", {})
        async for edit in self.client.room_get_event_relations(
            room, event_id, RelationshipType.replacement, "m.room.message", limit=20
        ):
            if edit.source.get("sender") == self.client.user_id:
                latest = edit.source.get("content", {})  # newest first
                break
        return kb.stored(latest)

    async def _answer(self, room: str, on: str | None, text: str) -> None:
        """A press's answer: a notice in reply to the pressed message (best effort)."""
        body = {**content.message(MatrixMarkup().escape(text), [], notice=True), ANSWERED: True}
        if on is not None:
            body = content.reply(body, on)
        with contextlib.suppress(Exception):
            got = await self.client.room_send(room, "m.room.message", body)
            if isinstance(got, ErrorResponse):
                logger.warning("matrix: answer not sent: {}", got.message)


def report_calls(chat: str, text: str, png: bytes) -> list[dict[str, Any]]:
    """The two calls of a daily report in room ``chat``: its text, then its chart."""
    report = {"chat_id": chat, "role": "report"}
    return [
        {**report, "method": "send", "text": MatrixMarkup().cut(text)},
        {**report, "method": "photo", "text": "Incidents per hour", "photo": png},
    ]
