"""An outbox edit edits the message it was queued for (``guard.notify.outbox.targets``),
whatever was asked about its incident later; rows are delivered here in the orders grouping
and retries can produce, through a channel that keeps every message (tests/notify/recording.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete

from guard.notify.outbox import queue
from guard.notify.outbox.worker import OutboxWorker
from guard.store.db import Database, open_database
from guard.store.edits import EditTarget
from guard.store.models import OutboxMessage, OutboxStatus
from tests.notify.recording import RecordingChannel

pytestmark = pytest.mark.unit

CHAT = "C1"
DENY = [[("Deny", "d" * 22)]]


@pytest.fixture
def db(tmp_path: Path) -> Database:
    return open_database(f"sqlite:///{tmp_path / 'guard.db'}")


@pytest.fixture
def channel(tmp_path: Path) -> RecordingChannel:
    return RecordingChannel(tmp_path / "recording.json")


def ask(db: Database, text: str) -> int:
    return queue.enqueue(
        db, "recording", method="send", chat_id=CHAT, text=text, buttons=DENY, incident_id=1,
        role="incident",
    )  # fmt: skip


def row(db: Database, outbox_id: int) -> OutboxMessage:
    with db.session() as s:
        found = s.get(OutboxMessage, outbox_id)
        assert found is not None
        return found


def closed_before_posted(db: Database, channel: RecordingChannel) -> tuple[Any, int, int]:
    """The worker's delivery, a question queued and its closing edit queued behind it."""
    first = ask(db, "asked first")
    edit = queue.close_question(db, "recording", chat_id=CHAT, incident_id=1, text="closed")
    assert edit is not None
    return OutboxWorker(channel, db).delivery.deliver, first, edit  # type: ignore[arg-type]


async def test_an_edit_queued_before_its_question_was_posted_edits_that_question(
    db: Database, channel: RecordingChannel
) -> None:
    deliver, first, edit = closed_before_posted(db, channel)
    again = ask(db, "asked again")
    await deliver(row(db, first))
    await deliver(row(db, again))  # the newer question goes out before the edit (a group)
    await deliver(row(db, edit))
    shown = {m["text"]: m for m in channel.messages().values()}
    assert set(shown) == {"closed", "asked again"}
    assert shown["closed"]["buttons"] == [] and shown["asked again"]["buttons"]


async def test_an_edit_whose_question_was_never_posted_edits_nothing(
    db: Database, channel: RecordingChannel
) -> None:
    deliver, first, edit = closed_before_posted(db, channel)
    with db.session() as s:  # the channel refused the post
        refused = s.get(OutboxMessage, first)
        assert refused is not None
        refused.status = OutboxStatus.failed
        s.add(refused)
    await deliver(row(db, ask(db, "asked again")))
    await deliver(row(db, edit))
    assert row(db, edit).status == OutboxStatus.skipped
    assert [m["text"] for m in channel.messages().values()] == ["asked again"]


async def test_an_edit_queued_by_an_older_release_edits_the_newest_question(
    db: Database, channel: RecordingChannel
) -> None:
    deliver = OutboxWorker(channel, db).delivery.deliver  # type: ignore[arg-type]
    await deliver(row(db, ask(db, "asked first")))
    edit = queue.close_question(db, "recording", chat_id=CHAT, incident_id=1, text="closed")
    assert edit is not None
    with db.session() as s:  # a row from before targets: it names its incident only
        s.execute(delete(EditTarget))
    await deliver(row(db, edit))
    assert [m["text"] for m in channel.messages().values()] == ["closed"]
