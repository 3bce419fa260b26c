"""The console is a channel of the outbox (``guard.notify.console``): a question is a row
first, written to the log by the console's worker with the exact ``guard approve|deny|reply``
commands, grouped within ``group_wait`` like any channel's, and closed by the shared
close-everywhere path when it is answered anywhere."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from loguru import logger
from sqlmodel import select

from guard.notify.base import HumanRequest, IncidentUpdate, SkillOption
from guard.notify.console import ConsoleChannel, ConsoleNotifier
from guard.notify.outbox import queue
from guard.store.db import Database, open_database
from guard.store.models import ChannelMessage, ConversationMessage
from tests.helpers.agent import stored_incident
from tests.helpers.console import console_worker
from tests.helpers.intake import eventually

pytestmark = pytest.mark.unit


@pytest.fixture
def db(tmp_path: Path) -> Database:
    return open_database(f"sqlite:///{tmp_path / 'guard.db'}")


@pytest.fixture
def said() -> Iterator[list[str]]:
    lines: list[str] = []
    sink = logger.add(lambda m: lines.append(str(m)), level="WARNING", format="{message}")
    yield lines
    logger.remove(sink)


def incidents(db: Database, n: int) -> list[HumanRequest]:
    with db.session() as session:
        ids = [stored_incident(session, "awaiting_human", title=f"fault {i}").id for i in range(n)]
    return [HumanRequest(i, f"fault {i}", "error", "api", 1, "") for i in ids]


async def test_a_question_is_a_row_first_and_the_worker_writes_it_once(db, said):
    [req] = incidents(db, 1)
    option = SkillOption("restart", "restarts the api", "a" * 22)
    await ConsoleNotifier(db).ask(
        HumanRequest(req.incident_id, "fault 0", "error", "api", 2, "HTTP 503", [option])
    )
    assert said == [] and len(queue.pending(db, "console")) == 1  # queued, not written
    async with console_worker(db):
        pass
    i = req.incident_id
    [text] = said
    assert text.strip().splitlines() == [
        f"Incident #{i} needs a human: fault 0 [error] x2",
        "  No trusted remedy is known. Approve one, or send a fix.",
        "  evidence:",
        "    HTTP 503",
        f"  approve:  guard approve {i} --skill restart   (restarts the api)",
        f"  fix:      guard reply {i} -- COMMAND  (a shell command for the sandbox, or an "
        "action like docker.restart NAME)",
        f"  deny:     guard deny {i}",
    ]
    with db.session() as s:
        [posted] = s.exec(select(ChannelMessage)).all()
        [entry] = s.exec(select(ConversationMessage)).all()  # kept once, when it was queued
    assert (posted.channel, posted.role, posted.incident_id) == ("console", "incident", i)
    assert (entry.chat, entry.incident_id, entry.text) == ("console", i, text.strip())


async def test_the_console_announces_the_first_at_once_and_the_rest_together(db, said):
    ask = incidents(db, 3)
    console = ConsoleNotifier(db)
    async with console_worker(db, group_wait=1.0):
        await console.ask(ask[0])
        await eventually(lambda: said, "the first question")
        await console.ask(ask[1])
        await console.ask(ask[2])
        await asyncio.sleep(0.3)
        assert len(said) == 1  # held until the window ends
        await eventually(lambda: len(said) == 2, "the group")
    first, two, three = (r.incident_id for r in ask)
    assert f"Incident #{first} needs a human" in said[0]
    assert "2 incidents need a human" in said[1]
    assert f"guard reply {two} -- COMMAND" in said[1] and f"guard deny {three}" in said[1]


async def test_a_question_answered_elsewhere_is_closed_on_the_console(db, said):
    [req] = incidents(db, 1)
    console = ConsoleNotifier(db)
    async with console_worker(db):
        await console.ask(req)
        await eventually(lambda: said, "the question")
        # answered on another channel: the agent tells every channel (``FanOut.update``)
        done = IncidentUpdate(req.incident_id, "fault 0", "resolved", "Approved on Slack.")
        await console.update(done)
    i = req.incident_id
    assert said[1].strip().startswith("(message 1 now says:)\nIncident #")
    assert "Resolved\nApproved on Slack." in said[1]
    assert said[2].strip() == f"Incident #{i} resolved: fault 0. Approved on Slack."
    assert len(said) == 3


async def test_a_post_a_crash_left_in_flight_is_found_after_a_restart(db, said):
    from guard.notify.channel import Post

    before = ConsoleChannel(db)
    first = await before.post(Post("console", "api down"))
    after = ConsoleChannel(db)  # a restarted Guard
    assert await after.find(Post("console", "api down"), 0, 0) == first
    assert await after.find(Post("console", "api down"), int(first), int(first)) is None
    assert await after.find(Post("console", "db down"), 0, 0) is None
    assert await after.post(Post("console", "db down")) == str(int(first) + 1)  # ids go on
