"""One question, one message, edited as signals join (``guard.triage.correlation``).

An incident's message header gets a line naming its related signals, ``Related signals (2):
http status on http://shop:8080/healthz (x3); upstream refused on /var/log/shop.log (x5)``.
``refresh`` puts the line in every channel's question about the incident, through the outbox:
a question still queued has its text changed in place (it goes out with the line); one
already posted, as its own message or in a grouped one, with its buttons still live, gets an
edit (same buttons, the line added or replaced; in a group, under the incident's line). A
closed question is left alone (``guard incidents show`` lists the related signals). The agent
calls it when a signal joins and right after it asks.

Each channel's rows are escaped and cut by its ``Markup``: a ``CHANNELS`` entry's
(``guard.notify.kinds``), or one a channel outside the table registers (``register``); a
channel with neither gets the line as plain printable text, uncut. This module knows no
channel.
"""

from __future__ import annotations

from sqlmodel import Session, col, select

from guard.notify.channel import Markup
from guard.notify.kinds import markup_maker
from guard.notify.outbox import grouping, queue
from guard.notify.relatedline import related_line, with_related
from guard.store.db import Database
from guard.store.models import OutboxMessage, OutboxStatus
from guard.triage.correlation import related_of
from guard.util.textsafe import printable


class Markups(dict[str, Markup]):
    """The markups registered, and a ``CHANNELS`` entry's made the first time it is asked (its
    folder is imported only then)."""

    def __missing__(self, channel: str) -> Markup:
        build = markup_maker(channel)
        if build is None:
            raise KeyError(channel)
        self[channel] = made = build()
        return made


MARKUPS: dict[str, Markup] = Markups()
"""How each outbox channel (by its rows' ``channel``) renders text."""


def register(channel: str, markup: Markup) -> None:
    """Escape and cut the related line in ``channel``'s rows with ``markup`` (a channel
    outside ``CHANNELS``)."""
    MARKUPS[channel] = markup


def markup_of(channel: str) -> Markup | None:
    """``channel``'s markup (None: plain printable text)."""
    try:
        return MARKUPS[channel]
    except KeyError:
        return None


def _questions(session: Session, incident_id: int) -> dict[tuple[str, str], list[OutboxMessage]]:
    """The incident's question rows (its ``send`` and the edits after it), per chat."""
    rows = session.exec(
        select(OutboxMessage)
        .where(OutboxMessage.incident_id == incident_id, OutboxMessage.role == "incident")
        .order_by(col(OutboxMessage.id))
    ).all()
    chats: dict[tuple[str, str], list[OutboxMessage]] = {}
    for row in rows:
        key = (row.channel, row.chat_id)
        if row.method == "send":
            chats[key] = [row]  # a new question: the older ones are over
        elif key in chats:
            chats[key].append(row)
    return chats


def _asking(session: Session, channel: str, chat: str, incident_id: int) -> bool:
    """Whether the incident's question was posted (as its own message or in a grouped one)
    and its buttons there are still live."""
    found = queue.incident_message_in(session, channel, chat, incident_id)
    if found is None or not found.live:
        return False
    if found.role != "group":
        return True
    member = grouping.member(session, channel, chat, incident_id)
    return member is not None and member.live


def refresh(db: Database, incident_id: int) -> int:
    """Put the related-signals line in the incident's questions; returns the edits queued."""
    edits: list[tuple[OutboxMessage, int]] = []
    with db.session() as session:
        related = related_of(session, incident_id)
        if not related:
            return 0
        line = related_line(related)
        for (channel, chat), rows in _questions(session, incident_id).items():
            markup = markup_of(channel)
            send, latest = rows[0], rows[-1]
            if any(r.method == "edit" and not r.buttons for r in rows[1:]):
                continue  # the question is over
            if markup is None:
                text = with_related(latest.text, printable(line))
            else:
                text = markup.cut(with_related(latest.text, markup.escape(line)))
            if text == latest.text:
                continue
            if send.status == OutboxStatus.pending:
                send.text = text  # not posted yet: it goes out with the line
                session.add(send)
            elif _asking(session, channel, chat, incident_id):
                edit = OutboxMessage(
                    method="edit",
                    chat_id=chat,
                    text=text,
                    role="incident",
                    incident_id=incident_id,
                    buttons=send.buttons,
                )
                edits.append((edit, queue.add(session, edit, channel)))
    for row, outbox_id in edits:
        queue.remember(db, row, outbox_id)
    return len(edits)
