"""The console as a ``Channel`` of the outbox: a post or an edit is a block in Guard's log
(what ``guard run`` prints). Operators answer with ``guard approve|deny|reply`` (the commands
each question names, ``ConsoleMarkup``); the outbox keeps each message in conversation memory
when it is queued, like every channel's.

A log cannot be searched, so the console keeps a journal (the store's key/value state): each
post's id and content digest, and each edit's, committed before the line is written. A post a
crash left in flight is found there (``find``) and not written again; an edit already written is
not written twice. At most once, then: a crash between the journal and the line (no await
between them) would lose that one line, never double it.

Tested by tests/notify/test_console_channel.py, the channel contract suite
(tests/notify/test_channel_contract.py) and tests/notify/test_console_crash.py.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from loguru import logger

from guard.notify import inbound
from guard.notify.channel import Buttons, Post, Rejected
from guard.notify.console.markup import ConsoleMarkup
from guard.store.db import Database
from guard.store.state import get_state, put_state

CHAT = "console"
JOURNAL = "console.journal"
KEEP = 200  # entries kept: a post in flight is among the last
EMPTY: dict[str, Any] = {"last": 0, "posts": [], "edits": []}
Change = Callable[[dict[str, Any], int], dict[str, Any]]


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class ConsoleChannel:
    """Without ``db`` (a test), the journal lives as long as the object."""

    name = CHAT

    def __init__(self, db: Database | None = None, public_url: str | None = None) -> None:
        self.db = db
        self.markup = ConsoleMarkup(public_url)
        self._memory: dict[str, Any] = {}

    def _journal(self) -> dict[str, Any]:
        if self.db is None:
            return {**EMPTY, **self._memory}
        with self.db.session() as session:
            return {**EMPTY, **get_state(session, JOURNAL)}

    def _change(self, chat: str, change: Change) -> dict[str, Any]:
        """The journal after ``change(journal, the highest id stored in chat)``, committed."""
        if self.db is None:
            self._memory = change(self._journal(), 0)
            return self._memory
        with self.db.session() as session:
            top = inbound.top(session, CHAT, chat)  # ids stored before there was a journal
            journal = change({**EMPTY, **get_state(session, JOURNAL)}, top)
            put_state(session, JOURNAL, journal)
        return journal

    async def post(self, post: Post) -> str:
        def add(journal: dict[str, Any], top: int) -> dict[str, Any]:
            last = max(int(journal["last"]), top) + 1
            posts = [*journal["posts"], [str(last), digest(post.text)]][-KEEP:]
            return {**journal, "last": last, "posts": posts}

        message_id = str(self._change(post.chat, add)["last"])
        logger.warning("\n{}", post.text)
        return message_id

    async def edit(self, chat: str, message_id: str, text: str, buttons: Buttons) -> None:
        journal = self._journal()
        if not message_id.isdigit() or not 0 < int(message_id) <= int(journal["last"]):
            raise Rejected("message to edit not found")
        text = f"(message {message_id} now says:)\n{text}"
        entry = [message_id, digest(text)]
        if entry in journal["edits"]:
            return  # written before (a crash kept the outbox from marking it): not again
        self._change(chat, lambda j, _top: {**j, "edits": [*j["edits"], entry][-KEEP:]})
        logger.warning("\n{}", text)

    async def find(self, post: Post, floor: int, known: int) -> str | None:
        wanted = digest(post.text)
        for message_id, seen in self._journal()["posts"]:
            if int(message_id) > floor and seen == wanted:
                return str(message_id)
        return None
