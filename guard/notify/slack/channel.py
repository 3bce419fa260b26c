"""Slack as a ``Channel``: ``chat.postMessage`` (in a thread with ``thread_ts``) and
``chat.update`` through slack_sdk's ``AsyncWebClient``, Slack's errors as the port's.

Slack answers a refusal with HTTP 200 and ``{"ok": false, "error"}`` (``invalid_blocks``,
``channel_not_found``, ``invalid_auth``...): ``Rejected``. A rate limit is HTTP 429 with
``Retry-After``: ``Retry`` after that many seconds (the SDK's own rate-limit retries are off,
so the outbox's order and grouping decide). A connection never made is ``Unreachable`` and
certainly not posted; any other network failure may have posted.

``find`` reads the channel's history (a thread's replies for a reply) above the floor: Slack
keeps the bot's messages, so the one with exactly the post's text and buttons is the post a
crash cut short, and Guard adopts it instead of posting again.

A picture (the daily report's chart) goes as its caption only: files need the files:write
scope and an upload of their own, which this channel does not do yet.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from guard.notify.channel import Buttons, Post, Rejected, Retry, Unreachable
from guard.notify.slack.blocks import layout, values
from guard.notify.slack.ids import message_id, ts_of
from guard.notify.slack.markup import SlackMarkup

NAME = "slack"
HISTORY = 200  # messages read at most when looking for a post in flight


@contextmanager
def errors() -> Iterator[None]:
    """Slack's errors as the Channel port's."""
    try:
        yield
    except SlackApiError as exc:
        response = exc.response
        if response.status_code == 429:
            raise Retry(
                float(response.headers.get("Retry-After", 1)), "slack: ratelimited"
            ) from exc
        error = response.get("error") if isinstance(response.data, dict) else None
        if response.status_code >= 500:
            raise Unreachable(f"slack: HTTP {response.status_code}", uncertain=True) from exc
        detail = response.get("response_metadata", {}) if isinstance(response.data, dict) else {}
        why = "; ".join(detail.get("messages", [])) if isinstance(detail, dict) else ""
        raise Rejected(
            f"slack: {error or response.status_code}" + (f" ({why})" if why else "")
        ) from exc
    except aiohttp.ClientConnectorError as exc:
        raise Unreachable(f"slack: {exc}", uncertain=False) from exc
    except (TimeoutError, aiohttp.ClientError) as exc:
        raise Unreachable(f"slack: {exc or type(exc).__name__}", uncertain=True) from exc


def client(token: str, base_url: str) -> AsyncWebClient:
    """A Web API client that leaves retries to the outbox."""
    return AsyncWebClient(token=token, base_url=base_url, retry_handlers=[], timeout=30)


class SlackChannel:
    name = NAME

    def __init__(self, web: AsyncWebClient) -> None:
        self.web = web
        self.markup = SlackMarkup()

    def _message(self, post: Post) -> dict[str, Any]:
        """The text (notifications show it) and blocks of a post."""
        return {"text": post.text, "blocks": layout(post.text, post.buttons)}

    async def post(self, post: Post) -> int:
        thread = ts_of(post.reply_to) if post.reply_to is not None else None
        with errors():
            answer = await self.web.chat_postMessage(
                channel=post.chat, thread_ts=thread, unfurl_links=False, **self._message(post)
            )
        return message_id(str(answer["ts"]))

    async def edit(self, chat: str, message_id: int, text: str, buttons: Buttons) -> None:
        post = Post(chat, text, buttons)
        with errors():
            await self.web.chat_update(channel=chat, ts=ts_of(message_id), **self._message(post))

    async def find(self, post: Post, floor: int, known: int) -> int | None:
        with errors():
            if post.reply_to is not None:
                answer = await self.web.conversations_replies(
                    channel=post.chat, ts=ts_of(post.reply_to), limit=HISTORY
                )
            else:
                answer = await self.web.conversations_history(
                    channel=post.chat, oldest=ts_of(floor), limit=HISTORY
                )
        want = values(layout(post.text, post.buttons))
        for msg in answer.get("messages") or []:
            ts = str(msg.get("ts", ""))
            if not ts or message_id(ts) <= floor or not msg.get("bot_id"):
                continue
            if msg.get("text") == post.text and values(msg.get("blocks")) == want:
                return message_id(ts)
        return None
