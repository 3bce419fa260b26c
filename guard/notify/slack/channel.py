"""Slack as a ``Channel``: ``chat.postMessage`` (in a thread with ``thread_ts``) and
``chat.update`` through slack_sdk's ``AsyncWebClient``, Slack's errors as the port's.

Slack answers a refusal with HTTP 200 and ``{"ok": false, "error"}`` (``invalid_blocks``,
``channel_not_found``, ``invalid_auth``...): ``Rejected``. A rate limit is HTTP 429 with
``Retry-After``: ``Retry`` after that many seconds (the SDK's own rate-limit retries are off,
so the outbox's order and grouping decide). A connection never made is ``Unreachable`` and
certainly not posted; any other network failure may have posted.

Message ids are Slack's ``ts`` strings (``1733472000.123456``). ``find`` reads the channel's
history (a thread's replies for a reply): Slack keeps the bot's messages, so the newest with
exactly the post's text and buttons is the post a crash cut short, and Guard adopts it instead
of posting again.

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

    async def post(self, post: Post) -> str:
        with errors():
            answer = await self.web.chat_postMessage(
                channel=post.chat,
                thread_ts=post.reply_to,
                unfurl_links=False,
                **self._message(post),
            )
        return str(answer["ts"])

    async def edit(self, chat: str, message_id: str, text: str, buttons: Buttons) -> None:
        post = Post(chat, text, buttons)
        with errors():
            await self.web.chat_update(channel=chat, ts=message_id, **self._message(post))

    async def find(self, post: Post, floor: int, known: int) -> str | None:
        """Slack's ids are no sequence Guard can number (``floor`` is 0): the post is the
        newest message of the bot's, in the channel or the thread, with its exact text and
        buttons (a question's buttons carry single-use approval ids)."""
        with errors():
            if post.reply_to is not None:
                answer = await self.web.conversations_replies(
                    channel=post.chat, ts=post.reply_to, limit=HISTORY
                )
            else:
                answer = await self.web.conversations_history(channel=post.chat, limit=HISTORY)
        want = values(layout(post.text, post.buttons))
        mine = [m for m in answer.get("messages") or [] if m.get("bot_id") and m.get("ts")]
        for msg in sorted(mine, key=lambda m: float(m["ts"]), reverse=True):
            same = msg.get("text") == post.text and values(msg.get("blocks")) == want
            if same and msg["ts"] != post.reply_to:
                return str(msg["ts"])
        return None
