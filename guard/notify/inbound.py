"""What a person did in a channel, as one neutral event; incoming updates handled once; and how
far a chat's message ids have gone, per channel.

A channel's inbound adapter turns what a person did (pressed a button, replied to a message,
typed a command) into an ``Inbound`` event; the answers policy (``guard.notify.answers``) acts
on it the same way for every channel and answers through the outbox in the channel's markup.

A channel may deliver an update again until Guard confirms it (a Bot API redelivers every update
it has not seen confirmed). If Guard dies after it handled an update and before it
confirmed it, the restarted Guard receives the update again. So the handler that acts on an
update stores its id (``Handled.mark``) in the same transaction as what it does (a queued
command, an answer in the outbox), and ``seen`` skips an update stored before. Rows older than
``KEEP`` go as new ones come.

Message ids in a chat are one sequence shared by users and Guard. ``top`` is the highest one
Guard knows (sent, or seen in an update): the floor above which the outbox looks for a message
whose post was cut short (``guard.notify.outbox.inflight``). It is also kept in the state table,
which retention never prunes, so it only grows.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal

from sqlalchemy import delete, func
from sqlmodel import Session, col, select

from guard.domain.records import utcnow
from guard.store.db import Database
from guard.store.models import ChannelMessage, InboundUpdate
from guard.store.state import get_state, put_state

KEEP = timedelta(days=2)

Answer = Callable[[str, bool], Awaitable[object]]
"""Answer a press at once (``text``, ``alert``: shown as a dialog), outside the chat."""


async def _unanswered(text: str, alert: bool) -> None:
    """A channel whose presses take no immediate answer."""


@dataclass(frozen=True)
class Inbound:
    """One thing a person did in a channel: a ``press`` of a button (``data``) on message
    ``message_id``, a ``text`` (maybe a reply to ``reply_to``) or a slash ``command``."""

    channel: str
    update_id: int
    kind: Literal["press", "text", "command"]
    chat: str | None
    user: int | str | None
    message_id: str | None = None
    text: str = ""
    data: str = ""
    reply_to: str | None = None
    answer: Answer = field(default=_unanswered, compare=False)

    @property
    def args(self) -> list[str]:
        """A command's words after its name."""
        return self.text.split()[1:]

    @property
    def command(self) -> str:
        """A command's name, without ``/`` and a ``@bot`` suffix."""
        words = self.text.split()
        return words[0].lstrip("/").split("@")[0].lower() if words else ""

    def handled(self) -> Handled:
        """The event as stored once handled (``Handled.mark``)."""
        return Handled(self.channel, self.update_id, self.chat, self.message_id)


class Handled:
    """An update being handled: stored by ``mark`` in the transaction of its effect."""

    def __init__(
        self, channel: str, update_id: int, chat_id: int | str | None, message_id: str | None
    ) -> None:
        self.channel = channel
        self.update_id = update_id
        self.chat_id = "" if chat_id is None else str(chat_id)
        self.message_id = message_id

    def mark(self, session: Session) -> None:
        """Store the update as handled (raises ``IntegrityError`` if it was, rolling back the
        effect with it), raise the chat's top message id, prune old rows."""
        session.add(
            InboundUpdate(
                channel=self.channel,
                update_id=self.update_id,
                chat_id=self.chat_id,
                message_id=self.message_id,
            )
        )
        session.flush()
        if self.chat_id and self.message_id is not None:
            raise_top(session, self.channel, self.chat_id, self.message_id)
        session.execute(
            delete(InboundUpdate).where(
                col(InboundUpdate.channel) == self.channel, col(InboundUpdate.at) < utcnow() - KEEP
            )
        )


def seen(db: Database, channel: str, update_id: int) -> bool:
    with db.session() as session:
        return session.get(InboundUpdate, (channel, update_id)) is not None


def _key(channel: str, chat_id: str) -> str:
    return f"{channel}.top:{chat_id}"


def number(message_id: str | None) -> int:
    """A message id's place in the chat's sequence: the id itself where it is a number
    (a Bot API's), else 0 (such a channel finds a cut post by its content alone)."""
    return int(message_id) if message_id and message_id.isdigit() else 0


def raise_top(session: Session, channel: str, chat_id: str, message_id: str) -> None:
    """The chat's messages reach ``message_id`` at least."""
    state = get_state(session, _key(channel, chat_id))
    if int(state.get("message_id", 0)) < number(message_id):
        put_state(session, _key(channel, chat_id), {"message_id": number(message_id)})


def top(session: Session, channel: str, chat_id: str) -> int:
    """The highest message id Guard knows in the chat (0 if none). Ids are strings: the
    longest, then the greatest, is the highest number."""
    known = [int(get_state(session, _key(channel, chat_id)).get("message_id", 0))]
    for table in (ChannelMessage, InboundUpdate):
        ids = col(table.message_id)
        highest = session.exec(
            select(ids)
            .where(table.channel == channel, table.chat_id == chat_id, ids.is_not(None))
            .order_by(func.length(ids).desc(), ids.desc())
            .limit(1)
        ).first()
        known.append(number(highest))
    return max(known)
