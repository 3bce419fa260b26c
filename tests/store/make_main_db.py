"""Write ``tests/store/data/release-9171acc.sql``: a database as release 9171acc (integer message
ids) left it.

It runs that release's own code in process (the durable outbox and its worker against the local
Bot API server, an announcement edited, two announcements grouped in one message, handled
updates, a send cut short in flight, rows still pending) into a SQLite file and dumps it as SQL
text. ``tests/store/test_stringids.py`` loads the dump and opens it with the current
code. The script imports the modules of that release, so run it from an export of it::

    mkdir /tmp/release && git archive 9171acc | tar -x -C /tmp/release
    cp tests/store/make_main_db.py /tmp/release/tests/store/
    cd /tmp/release && PYTHONPATH=$PWD python tests/store/make_main_db.py OUT.sql
"""

from __future__ import annotations

import sys
from pathlib import Path

from telegram import Bot

from guard.notify.inbound import Handled
from guard.notify.outbox import inflight
from guard.notify.telegram import outbox
from guard.notify.telegram.channel import NAME
from guard.store.db import open_database
from tests.fakes.telegram import TelegramServer
from tests.helpers.telegram import CHAT, TOKEN
from tests.store.make_release_db import conversation, cut_short, incident, main

DEFAULT = Path("tests/store/data/release-9171acc.sql")


async def flows(url: str, server: TelegramServer) -> None:
    db = open_database(url)
    with db.session() as s:
        ids = [incident(s, n) for n in range(1, 5)]
    bot = Bot(TOKEN, base_url=server.url + "/bot")
    await bot.initialize()
    await conversation(db, outbox.OutboxWorker(bot, db, group_wait=5.0), outbox, ids)
    for update_id, message_id in ((500, server.say(42, "hi", chat_id=CHAT)), (501, None)):
        with db.session() as s:
            Handled(NAME, update_id, CHAT, message_id).mark(s)  # type: ignore[arg-type]
    cut_short(db, outbox, inflight, ids)
    await bot.shutdown()
    db.dispose()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT, flows)
