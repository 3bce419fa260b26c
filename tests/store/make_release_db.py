"""Write ``tests/store/data/release-dbf7ca5.sql``: a database as release dbf7ca5 left it.

It runs the release's own code in process (the durable outbox and its worker against the local
Bot API server, grouped announcements, an in-flight send cut short, handled updates, approvals,
human commands, the audit chain) into a SQLite file and dumps it as SQL text.
``tests/store/test_upgrade_release.py`` loads the dump and opens it with the current code.

The script imports the modules of that release, so run it from a checkout of it::

    git worktree add /tmp/release dbf7ca5
    cp tests/store/make_release_db.py /tmp/release/tests/store/
    cd /tmp/release && PYTHONPATH=$PWD python tests/store/make_release_db.py OUT.sql
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Coroutine
from datetime import timedelta
from pathlib import Path
from typing import Any

from telegram import Bot

from guard.domain.records import utcnow
from guard.notify.telegram import inflight, outbox, updates  # type: ignore[attr-defined]
from guard.notify.telegram.outbox import OutboxWorker  # type: ignore[attr-defined]
from guard.store.audit import append
from guard.store.db import open_database
from guard.store.models import Approval, HumanCommand, Incident, IncidentState
from tests.fakes.telegram import TelegramServer
from tests.helpers.telegram import CHAT, TOKEN

BUTTONS = [[["▶ Run web-fix", "a1"]], [["✖ Deny", "d1"]]]
PENDING_TEXTS = ("still pending: the reply", "still pending: the report")
IN_FLIGHT_TEXT = "in flight when the release died"


def incident(session: object, n: int) -> int:
    now = utcnow()
    inc = Incident(
        fingerprint=f"fp{n}",
        check_key=f"k{n}",
        monitor_id="web",
        source="http",
        target=f"http://svc{n}",
        kind="http_status",
        severity="critical",
        title=f"svc{n} down",
        message=f"svc{n} answered 503",
        state=IncidentState.awaiting_human,
        opened_at=now,
        first_seen=now,
        last_seen=now,
    )
    session.add(inc)  # type: ignore[attr-defined]
    session.flush()  # type: ignore[attr-defined]
    assert inc.id is not None
    return inc.id


async def flows(url: str, server: TelegramServer) -> None:
    db = open_database(url)
    with db.session() as s:
        ids = [incident(s, n) for n in range(1, 5)]
        for i in ids:
            s.add(
                Approval(
                    id=f"a{i}",
                    incident_id=i,
                    kind="skill",
                    skill="web-fix",
                    expires_at=utcnow() + timedelta(days=1),
                )
            )
        s.add(
            HumanCommand(
                incident_id=ids[0],
                verb="approve",
                skill="web-fix",
                actor="telegram:42",
                channel="telegram",
            )
        )
        append(s, actor="guard", action="incident.opened", subject=f"incident:{ids[0]}")
    bot = Bot(TOKEN, base_url=server.url + "/bot")
    await bot.initialize()
    await conversation(db, OutboxWorker(bot, db, group_wait=5.0), outbox, ids)
    # updates handled (a human's message; a press)
    for update_id, message_id in ((500, server.say(42, "hi", chat_id=CHAT)), (501, None)):
        with db.session() as s:
            updates.Handled(update_id, CHAT, message_id).mark(s)  # type: ignore[attr-defined]
    cut_short(db, outbox, inflight, ids)
    await bot.shutdown()
    db.dispose()


async def conversation(db: Any, worker: Any, outbox: Any, ids: list[int]) -> None:
    """One incident announced on its own, then edited (its question closed); two announcements
    that go out as one grouped message."""
    outbox.enqueue(
        db,
        method="send",
        chat_id=CHAT,
        text="<b>#1</b> down",
        buttons=BUTTONS,
        incident_id=ids[0],
        role="incident",
    )
    await worker._deliver(outbox.pending(db)[0])
    outbox.close_question(db, chat_id=CHAT, incident_id=ids[0], text="<b>#1</b> healed")
    await worker._deliver(outbox.pending(db)[0])
    for i in ids[1:3]:
        outbox.enqueue(
            db,
            method="send",
            chat_id=CHAT,
            text=f"<b>#{i}</b> down",
            buttons=[[["✖ Deny", f"d{i}"]]],
            incident_id=i,
            role="incident",
        )
    await worker.delivery.deliver_group(outbox.pending(db))


def cut_short(db: Any, outbox: Any, inflight: Any, ids: list[int]) -> None:
    """A send cut short (in flight, posted, its id never stored), and rows nobody sent yet."""
    outbox.enqueue(
        db, method="send", chat_id=CHAT, text=IN_FLIGHT_TEXT, incident_id=ids[3], role="text"
    )
    row = outbox.pending(db)[0]
    inflight.begin(db, [row], "send", row.text, [])
    for text in PENDING_TEXTS:
        outbox.enqueue(
            db,
            method="send",
            chat_id=CHAT,
            text=text,
            incident_id=ids[0],
            role="reply",
            reply_to_incident=True,
        )


Flows = Callable[[str, TelegramServer], Coroutine[Any, Any, None]]


def main(out: Path, flows: Flows = flows) -> None:
    """Run ``flows`` into a fresh SQLite file and write it to ``out`` as SQL text."""
    server = TelegramServer(TOKEN).start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "guard.db"
            asyncio.run(flows(f"sqlite:///{path}", server))
            conn = sqlite3.connect(path)
            lines = [line for line in conn.iterdump() if "sqlite_sequence" not in line]
            conn.close()
    finally:
        server.stop()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("tests/store/data/release-dbf7ca5.sql"))
