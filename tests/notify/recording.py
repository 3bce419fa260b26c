"""A second chat channel, in the test suite only: it keeps every message in a JSON file, so a
restarted process (or the test) reads what an earlier one posted and edited. Its message ids
are shaped like Slack's (``1733472000.000001``): strings, not numbers."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from guard.notify.channel import Buttons, Post, Rejected
from guard.notify.plain import PlainMarkup


class RecordingChannel:
    name = "recording"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.markup = PlainMarkup()

    def messages(self) -> dict[str, dict[str, Any]]:
        """Every message posted, by id, as it is now (``edits``: how often it was edited)."""
        found: dict[str, dict[str, Any]] = (
            json.loads(self.path.read_text()) if self.path.exists() else {}
        )
        return found

    def _save(self, messages: dict[str, dict[str, Any]]) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(messages))
        os.replace(tmp, self.path)  # a kill -9 leaves the old file or the new one

    async def post(self, post: Post) -> str:
        messages = self.messages()
        message_id = f"1733472000.{len(messages) + 1:06d}"
        what = {"chat": post.chat, "text": post.text, "buttons": _json(post.buttons)}
        messages[message_id] = {**what, "reply_to": post.reply_to, "edits": 0}
        self._save(messages)
        return message_id

    async def edit(self, chat: str, message_id: str, text: str, buttons: Buttons) -> None:
        messages = self.messages()
        if message_id not in messages or messages[message_id]["chat"] != chat:
            raise Rejected("message to edit not found")
        edits = messages[message_id]["edits"] + 1
        messages[message_id].update(text=text, buttons=_json(buttons), edits=edits)
        self._save(messages)

    async def find(self, post: Post, floor: int, known: int) -> str | None:
        """Its ids are no sequence (``floor`` is 0): the post is found by its content."""
        same = (post.chat, post.text, _json(post.buttons))
        found = self.messages().items()
        return next((i for i, m in found if (m["chat"], m["text"], m["buttons"]) == same), None)


def _json(buttons: Buttons) -> list[Any]:
    return [[list(b) for b in row] for row in buttons]
