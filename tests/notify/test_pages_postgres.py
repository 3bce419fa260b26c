"""The page outbox on a real PostgreSQL server: two transactions queueing the same page at once
queue it once (the unique ``(target, key)`` settles the race inside a savepoint, so the loser's
transaction goes on), and a page queued there is delivered."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from sqlalchemy import text
from sqlmodel import col, select

from guard.config import Settings
from guard.notify.pagers import enqueue_pages
from guard.notify.pagers.worker import PageWorker
from guard.store.db import open_database
from guard.store.paging import PageOutbox
from tests.fakes.pagerduty import ROUTING_KEY, PagerDutyServer
from tests.fakes.postgres import fresh_database
from tests.helpers.agent import stored_incident
from tests.notify.test_pages import work_until


def test_two_transactions_queue_one_page_and_it_is_delivered(
    tmp_path: Path, postgres_url: str, pd: PagerDutyServer
) -> None:
    db = open_database(fresh_database(postgres_url))
    with db.session() as session:
        inc = stored_incident(session, state="awaiting_human")
    loser: list[list[int]] = []

    def second() -> None:
        with db.session() as session:
            loser.append(enqueue_pages(session, ["pagerduty:primary"], inc, "trigger", key="k"))
            session.add(
                PageOutbox(
                    target="webhook:x", key="other", incident_id=inc.id or 0, action="trigger"
                )
            )

    with db.session() as session:
        won = enqueue_pages(session, ["pagerduty:primary"], inc, "trigger", key="k")
        racer = threading.Thread(target=second)
        racer.start()
        # the second transaction waits on the unique index for this one (not a timed guess)
        deadline = time.monotonic() + 60
        with db.engine.connect() as probe:
            while not probe.execute(
                text("select count(*) from pg_locks where not granted")
            ).scalar():
                assert time.monotonic() < deadline, "the second transaction never waited"
                time.sleep(0.05)
    racer.join(60)
    assert len(won) == 1 and loser == [[]]  # a no-op for the loser, whose transaction went on
    with db.session() as session:
        found = session.exec(select(PageOutbox.target).order_by(col(PageOutbox.id))).all()
    assert found == ["pagerduty:primary", "webhook:x"]
    with db.session() as session:  # the other row is not this test's business
        session.exec(
            select(PageOutbox).where(PageOutbox.target == "webhook:x")
        ).one().status = "failed"
    settings = Settings(
        data_dir=tmp_path,
        notifiers={"pagerduty": {"primary": {"routing_key": ROUTING_KEY, "url": pd.url}}},
    )
    work_until(PageWorker(settings, db), lambda: len(pd.events) == 1)
    assert pd.events[0]["dedup_key"] == f"guard-incident-{inc.id}"
    db.dispose()
