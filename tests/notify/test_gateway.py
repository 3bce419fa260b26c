"""One gateway base (``guard.notify.gateway``): every chat channel's runner starts and stops the
same way, schedules the daily report on ``report.cron`` and queues it in its own calls when the
scheduler fires, with a real scheduler and a real SQLite store."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlmodel import select

from guard.notify.email.runner import EmailRunner
from guard.notify.fanout import ChannelNotifier
from guard.notify.gateway import REPORT_JOB, Gateway
from guard.notify.html import HtmlMarkup
from guard.notify.matrix.gateway import MatrixGateway
from guard.notify.slack.gateway import SlackGateway
from guard.notify.telegram.gateway import TelegramGateway
from guard.store.models import OutboxMessage
from tests.conftest import GuardHome

pytestmark = pytest.mark.unit


class Probe(Gateway):
    """A channel with nothing to reach: it only receives until stopped."""

    name = "probe"

    async def connect(self) -> None:
        self.ready.set()
        await self.stopping.wait()

    def report_calls(self, chat: str, text: str, png: bytes) -> list[dict[str, Any]]:
        return [{"method": "photo", "chat_id": chat, "text": text, "photo": png, "role": "report"}]


async def test_the_report_is_scheduled_by_cron_and_queued_in_the_channels_calls(
    home: GuardHome,
) -> None:
    home.write_config({"report": {"cron": "15 6 * * 1-5", "timezone": "Asia/Tokyo"}})
    db = home.database()
    gw = Probe(
        home.settings(), db, None, "room", ChannelNotifier(db, "probe", "room", HtmlMarkup())
    )
    await gw.start()
    try:
        await asyncio.wait_for(gw.ready.wait(), 5)
        job = gw.scheduler.get_job(REPORT_JOB)
        nxt = job.next_run_time.astimezone(ZoneInfo("Asia/Tokyo"))
        assert (nxt.hour, nxt.minute, nxt.weekday() < 5) == (6, 15, True)
        job.modify(next_run_time=datetime.now(UTC) + timedelta(milliseconds=200))
        for _ in range(100):
            with db.session() as s:
                rows = s.exec(select(OutboxMessage).where(OutboxMessage.channel == "probe")).all()
            if rows:
                break
            await asyncio.sleep(0.1)
        (row,) = rows
        assert (row.chat_id, row.role, row.method) == ("room", "report", "photo")
        assert "Incidents opened: <b>0</b>" in row.text and (row.photo or b"").startswith(
            b"\x89PNG"
        )
    finally:
        await gw.stop()
    assert not gw.scheduler.running and all(t.done() for t in gw._tasks)


@pytest.mark.parametrize("runner", [TelegramGateway, SlackGateway, MatrixGateway, EmailRunner])
def test_every_chat_channel_keeps_only_what_is_its_own(runner: type[Gateway]) -> None:
    assert issubclass(runner, Gateway)
    shared = {"start", "stop", "send_report", "run_outbox", "spawn", "pause", "__init__"}
    assert shared & set(vars(runner)) <= {"__init__"}, "the lifecycle is the base's"
    assert {"connect", "report_calls"} <= set(vars(runner)), "what is the channel's own"
