"""Slack's message ids on a real PostgreSQL server: a message posted through the outbox is
recorded with its ``ts`` as Slack spells it (``1733472000.000001``), so edits and thread replies
find it. (With the store's former integer ids, a ts did not fit: the test failed before the
merge of string ids.)"""

from __future__ import annotations

import asyncio

from sqlmodel import select

from guard.notify.outbox import queue
from guard.notify.outbox.worker import OutboxWorker
from guard.notify.slack.channel import SlackChannel, client
from guard.store.db import open_database
from guard.store.models import ChannelMessage, OutboxMessage, OutboxStatus
from tests.fakes.postgres import fresh_database
from tests.fakes.slack import BOT_TOKEN, CHANNEL, SlackServer


async def test_a_question_posted_on_slack_is_recorded_on_postgres(
    postgres_url: str, slack: SlackServer
) -> None:
    db = open_database(fresh_database(postgres_url))
    queue.enqueue(db, "slack", method="send", chat_id=CHANNEL, text="api down", role="text")
    stop = asyncio.Event()
    task = asyncio.create_task(
        OutboxWorker(SlackChannel(client(BOT_TOKEN, slack.url)), db).run(stop)
    )
    try:
        for _ in range(50):
            if not queue.pending(db, "slack"):
                break
            await asyncio.sleep(0.1)
    finally:
        stop.set()
        await task
    [posted] = slack.bot_messages("api down")
    with db.session() as s:
        [row] = s.exec(select(OutboxMessage)).all()
        [msg] = s.exec(select(ChannelMessage)).all()
    assert row.status == OutboxStatus.sent
    assert msg.message_id == posted["ts"]  # Slack's ts, as Slack spells it
