"""Which message an outbox edit is for, fixed when the edit is queued (issue 44).

An edit used to name only its incident, and the worker edited the incident's newest message
when it sent: an edit queued for a question that was over (resolved, then reopened) landed on
the new question asked meanwhile. ``EditTarget`` names the message (a ``ChannelMessage``) or,
when that was not posted yet, the outbox row of its post; ``PostedAs`` maps a post's row to the
message it became, written in the transaction that stores the message
(``guard.notify.outbox.targets``). Tested by tests/notify/test_channel_contract.py.
"""

from __future__ import annotations

from sqlmodel import Field, SQLModel


class EditTarget(SQLModel, table=True):
    """The message an outbox edit row edits: ``message`` (posted) or ``post`` (queued then);
    both None: there was nothing to edit."""

    __tablename__ = "outbox_edit_target"

    outbox_id: int = Field(primary_key=True)  # the edit's row
    message: int | None = None  # channel_message.id
    post: int | None = None  # outbox.id of the post, not yet sent when the edit was queued


class PostedAs(SQLModel, table=True):
    """The message an outbox post row became (one message for every row of a group)."""

    __tablename__ = "outbox_posted_as"

    outbox_id: int = Field(primary_key=True)  # the post's row
    message: int = Field(index=True)  # channel_message.id
