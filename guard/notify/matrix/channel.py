"""Matrix as a ``Channel``: matrix-nio's client-server calls, Matrix's errors as the port's.

``post`` is ``PUT /rooms/{room}/send/m.room.message/{txn}`` (a picture is uploaded to the media
repository first and sent as ``m.image``); ``edit`` sends an ``m.replace`` of the message.
``M_LIMIT_EXCEEDED`` (a 429) becomes ``Retry`` with its ``retry_after_ms``; a connection that
failed or timed out ``Unreachable`` (certain not to have posted only when it never connected);
any other refusal (``M_FORBIDDEN``: not in the room, ``M_UNKNOWN_TOKEN``...) ``Rejected``. nio's
own retries are off (``AsyncClientConfig(max_limit_exceeded=0, max_timeouts=0)``): the outbox
retries, in order.

``find``: a bot can read its room, so the probe looks through the room's latest ``LIMIT``
events (newest first) for the bot's own message with exactly the post's text and buttons (a
picture: an ``m.image`` with its caption; the first matrix crash run posted a chart twice) and
no newer message of the bot's after it; it posts nothing.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import aiohttp
from nio import (
    AsyncClient,
    ErrorResponse,
    MessageDirection,
    RoomMessagesResponse,
    RoomSendResponse,
    UploadResponse,
)

from guard.notify.channel import Buttons, Post, Rejected, Retry, Unreachable
from guard.notify.matrix import content
from guard.notify.matrix.markup import MatrixMarkup

NAME = "matrix"
LIMIT = 50  # events looked through by ``find``
ANSWERED = "org.guard.answer"  # a press's answer (the gateway's): not a post of the outbox
T = TypeVar("T")


@asynccontextmanager
async def errors() -> AsyncIterator[None]:
    """Network failures as the Channel port's (a refusal is a response: see ``checked``)."""
    try:
        yield
    except aiohttp.ClientConnectorError as exc:
        raise Unreachable(str(exc), uncertain=False) from exc
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise Unreachable(str(exc) or type(exc).__name__) from exc


def checked(got: T, wanted: type[T]) -> T:
    """``got`` if it is the success ``wanted``; else the port's error for Matrix's answer."""
    if isinstance(got, wanted):
        return got
    if isinstance(got, ErrorResponse):
        if got.status_code == "M_LIMIT_EXCEEDED":
            raise Retry((got.retry_after_ms or 1000) / 1000, f"matrix: {got.message}")
        raise Rejected(f"matrix: {got.status_code}: {got.message}")
    raise Rejected(f"matrix: unexpected answer {type(got).__name__}")


class MatrixChannel:
    name = NAME

    def __init__(self, client: AsyncClient) -> None:
        self.client = client
        self.markup = MatrixMarkup()

    async def _call(self, call: Awaitable[Any], wanted: type[T]) -> T:
        async with errors():
            got: T = await call
        return checked(got, wanted)

    async def post(self, post: Post) -> str:
        body = await self._content(post)
        if post.reply_to is not None:
            body = content.reply(body, str(post.reply_to))
        sent = await self._call(
            self.client.room_send(post.chat, "m.room.message", body, tx_id=uuid.uuid4().hex),
            RoomSendResponse,
        )
        return str(sent.event_id)

    async def _content(self, post: Post) -> dict[str, Any]:
        if post.photo is None:
            return content.message(post.text, post.buttons)
        uploaded, _ = await self._upload(post.photo)
        return {
            **_picture(post),
            "url": uploaded.content_uri,
            "info": {"mimetype": "image/png", "size": len(post.photo)},
        }

    async def _upload(self, png: bytes) -> tuple[UploadResponse, Any]:
        async with errors():
            got, keys = await self.client.upload(
                io.BytesIO(png), content_type="image/png", filename="chart.png", filesize=len(png)
            )
        return checked(got, UploadResponse), keys

    async def edit(self, chat: str, message_id: int | str, text: str, buttons: Buttons) -> None:
        new = content.message(text, buttons)
        await self._call(
            self.client.room_send(
                chat, "m.room.message", content.edit(new, str(message_id)), tx_id=uuid.uuid4().hex
            ),
            RoomSendResponse,
        )

    async def find(self, post: Post, floor: int | str, known: int | str) -> str | None:
        # a picture is an ``m.image`` with its caption (its upload's URL is new each time)
        wanted = content.message(post.text, post.buttons) if post.photo is None else _picture(post)
        got = await self._call(
            self.client.room_messages(
                post.chat, start=None, direction=MessageDirection.back, limit=LIMIT
            ),
            RoomMessagesResponse,
        )
        for event in got.chunk:  # newest first
            source = getattr(event, "source", {})
            if source.get("sender") != self.client.user_id:
                continue
            said = source.get("content", {})
            if "m.new_content" in said or said.get(ANSWERED):
                continue  # an edit of an older message, or a press's answer
            return str(source["event_id"]) if content.same(said, wanted) else None
        return None


def _picture(post: Post) -> dict[str, Any]:
    """What an ``m.image`` post shows: its caption (``find`` matches a picture by it)."""
    return {"msgtype": "m.image", "body": content.plain(post.text) or "chart.png"}
