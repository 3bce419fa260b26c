"""The message an edit is for, fixed when the edit is queued, for every channel (issue 44).

An edit names the message it was made for: the one its caller saw (a press's message, the
sync's live question or group), else the incident's newest question at that moment: its post
still queued (the outbox row) or the message it became. The worker edits that message when it
sends, never the incident's newest one: a question closed after the incident reopened and
was asked again (in a new group, say) closes the old question, and the new one keeps asking.
Tested by tests/notify/test_channel_contract.py (every channel) and
tests/notify/test_edit_targets.py.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlmodel import Session, col, select

from guard.store.edits import EditTarget, PostedAs
from guard.store.models import ChannelMessage, OutboxMessage, OutboxStatus

Newest = Callable[[Session, str, str, int], "ChannelMessage | None"]
"""The incident's newest message in a chat (``queue.incident_message_in``)."""


def fix(session: Session, row: OutboxMessage, message: int | None, newest: Newest) -> None:
    """In the transaction that queues the edit ``row``: record what it edits, ``message`` (a
    ``ChannelMessage`` id) if the caller knows it, else the incident's newest question."""
    assert row.id is not None and row.incident_id is not None
    post = None
    if message is None:
        post = session.exec(
            select(OutboxMessage.id)
            .where(
                OutboxMessage.channel == row.channel,
                OutboxMessage.chat_id == row.chat_id,
                OutboxMessage.incident_id == row.incident_id,
                col(OutboxMessage.status).in_((OutboxStatus.pending, OutboxStatus.in_flight)),
                col(OutboxMessage.id) < row.id,
                OutboxMessage.method == "send",  # a question's post (``grouping.is_ask``)
                OutboxMessage.role == "incident",
            )
            .order_by(col(OutboxMessage.id).desc())
        ).first()
    if message is None and post is None:
        found = newest(session, row.channel, row.chat_id, row.incident_id)
        message = found.id if found is not None else None
    session.add(EditTarget(outbox_id=row.id, message=message, post=post))


def posted(session: Session, rows: list[OutboxMessage], message: ChannelMessage) -> None:
    """In the transaction that stores ``message``: the post rows it was made of."""
    session.flush()
    assert message.id is not None
    for row in rows:
        if row.id is not None and session.get(PostedAs, row.id) is None:
            session.add(PostedAs(outbox_id=row.id, message=message.id))


def target(session: Session, row: OutboxMessage) -> ChannelMessage | bool | None:
    """The message the edit ``row`` edits; None if there is none (its post failed, or nothing
    was asked); False if the row names none (queued by a release before this one)."""
    named = session.get(EditTarget, row.id)
    if named is None:
        return False
    message = named.message
    if message is None and named.post is not None:
        became = session.get(PostedAs, named.post)
        message = became.message if became is not None else None
    return session.get(ChannelMessage, message) if message is not None else None


def message_of(session: Session, channel: str, chat: str, message_id: str) -> int | None:
    """The ``ChannelMessage`` id of a channel's message (a press names the one pressed)."""
    return session.exec(
        select(ChannelMessage.id).where(
            ChannelMessage.channel == channel,
            ChannelMessage.chat_id == chat,
            ChannelMessage.message_id == message_id,
        )
    ).first()
