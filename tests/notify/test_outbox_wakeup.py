"""The outbox's wake-up: a row committed in this process wakes its channel's send worker at
once, whichever code queued it; a rolled-back one or another channel's does not."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from guard.notify.outbox import queue, wakeup, worker
from guard.notify.outbox.worker import OutboxWorker
from guard.store.db import Database, open_database
from guard.store.models import OutboxMessage
from tests.notify.recording import RecordingChannel


@pytest.fixture
def db(tmp_path: Path) -> Database:
    return open_database(f"sqlite:///{tmp_path / 'guard.db'}")


def test_a_commit_wakes_its_channel_after_the_row_is_readable(db: Database) -> None:
    seen: list[int] = []  # rows pending when each wake came

    def woken() -> None:
        seen.append(len(queue.pending(db, "recording")))

    unsubscribe = wakeup.subscribe("recording", woken)
    try:
        thread = threading.Thread(
            target=queue.enqueue, args=(db, "recording"), kwargs={"method": "send", "chat_id": 1}
        )
        thread.start()
        thread.join()
        assert seen == [1]  # once, and the row was there to read
        queue.enqueue(db, "telegram", method="send", chat_id=1)  # another channel's
        with pytest.raises(RuntimeError), db.session() as session:
            session.add(OutboxMessage(channel="recording", method="send", chat_id="1"))
            session.flush()
            raise RuntimeError("rolled back")
        with db.session():
            pass  # a later commit of nothing queued wakes nobody either
        assert seen == [1]
    finally:
        unsubscribe()
    queue.enqueue(db, "recording", method="send", chat_id=1)
    assert seen == [1]  # unsubscribed


async def test_the_worker_sends_a_queued_row_without_waiting_for_its_next_look(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker, "IDLE", 600.0)  # its own look would come in ten minutes
    channel = RecordingChannel(tmp_path / "messages.json")
    stop = asyncio.Event()
    running = asyncio.create_task(OutboxWorker(channel, db).run(stop))
    try:
        await asyncio.sleep(0.5)  # its first look found nothing: it waits
        await asyncio.to_thread(queue.enqueue, db, "recording", method="send", chat_id=7, text="hi")
        for _ in range(100):
            if channel.messages():
                break
            await asyncio.sleep(0.1)
        assert [m["text"] for m in channel.messages().values()] == ["hi"]
    finally:
        stop.set()
        await asyncio.wait_for(running, 10)
