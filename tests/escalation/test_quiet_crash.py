"""A kill -9 of a real process between asking a held question and settling its hold: the next
release does not ask it again (the ask row is already queued) and settles the hold."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from sqlmodel import select

from guard.config import Settings
from guard.notify.fanout import ChannelNotifier
from guard.notify.quiet import QuietNotifier
from guard.notify.telegram.markup import HtmlMarkup
from guard.store.db import open_database
from guard.store.escalation import QuietHeld
from guard.store.models import OutboxMessage
from tests.escalation.helpers import Clock
from tests.escalation.test_quiet import MORNING, NIGHT, incident

QUIET = {"from": "22:00", "to": "08:00", "timezone": "Europe/Madrid", "below": "critical"}
RELEASE = f"""
import asyncio
from datetime import datetime
from guard.config import Settings
from guard.notify.fanout import ChannelNotifier
from guard.notify.quiet import QuietNotifier
from guard.notify.telegram.markup import HtmlMarkup
from guard.store.db import open_database

s = Settings(data_dir=DATA, quiet_hours={QUIET!r})
db = open_database(s.database_url)
inner = ChannelNotifier(db, "telegram", "1001", HtmlMarkup())
morning = datetime.fromisoformat({MORNING.isoformat()!r})
print(asyncio.run(QuietNotifier(inner, s, db, lambda: morning).release()), flush=True)
"""


def release(data: Path, crash_at: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
    if crash_at:
        env["GUARD_CRASH_AT"] = crash_at
    code = RELEASE.replace("DATA", repr(str(data)), 1)
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )


async def test_a_kill_after_asking_a_held_question_does_not_ask_it_twice(tmp_path: Path) -> None:
    s = Settings(data_dir=tmp_path, quiet_hours=QUIET)
    db = open_database(s.database_url)
    inner = ChannelNotifier(db, "telegram", "1001", HtmlMarkup())
    req = incident(db, "warning")
    await QuietNotifier(inner, s, db, Clock(NIGHT)).ask(req)

    killed = release(tmp_path, "quiet.asked_not_marked")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with db.session() as session:
        asks = session.exec(select(OutboxMessage).where(OutboxMessage.role == "incident")).all()
        assert len(asks) == 1  # asked, and the hold not settled
        assert session.exec(select(QuietHeld)).one().released_at is None

    again = release(tmp_path, None)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == f"[{req.incident_id}]"
    with db.session() as session:
        asks = session.exec(select(OutboxMessage).where(OutboxMessage.role == "incident")).all()
        held = session.exec(select(QuietHeld)).one()
    assert len(asks) == 1  # not asked twice
    assert held.outcome == "asked at the window's end"
