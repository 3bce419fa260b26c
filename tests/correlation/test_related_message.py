"""One question, one message: the incident's message names its related signals as they join."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import col, select

from guard.notify import related
from guard.notify.outbox import queue
from guard.notify.related import refresh
from guard.notify.relatedline import with_related
from guard.notify.telegram import markup  # Telegram's rows: its package registers its HTML
from guard.store.db import open_database
from guard.store.models import ChannelMessage, OutboxMessage, OutboxStatus
from tests.correlation.helpers import related_row
from tests.helpers.agent import stored_incident

pytestmark = pytest.mark.unit

QUESTION = (
    "<b>Incident #1</b> [critical]: down\nTarget: <code>shop</code> · seen 1 times\n\nWhat now?"
)
BUTTONS = [[("▶ Run x", "ap1")], [("✍ Send a fix", "fix:1")]]


def joined(db, incident_id: int, monitor: str, target: str) -> None:
    with db.session() as s:
        s.add(related_row(incident_id, monitor, target))


def rows(db) -> list[OutboxMessage]:
    with db.session() as s:
        return list(s.exec(select(OutboxMessage).order_by(col(OutboxMessage.id))).all())


def test_the_question_is_edited_as_signals_join(tmp_path: Path):
    assert isinstance(markup.HtmlMarkup(), type(related.MARKUPS["telegram"]))
    db = open_database(f"sqlite:///{tmp_path / 'g.db'}")
    with db.session() as s:
        inc = stored_incident(s).id
    assert refresh(db, inc) == 0  # nothing related, nothing asked
    queue.enqueue(
        db,
        "telegram",
        method="send",
        chat_id=5,
        text=QUESTION,
        buttons=BUTTONS,
        incident_id=inc,
        role="incident",
    )
    joined(db, inc, "web", "http://a&b/")
    assert refresh(db, inc) == 0  # still queued: it goes out with the line
    (send,) = rows(db)
    assert send.text.split("\n")[2] == "Related signals (1): http status on http://a&amp;b/ (x2)"
    assert send.text.endswith("\n\nWhat now?")
    with db.session() as s:  # the worker posts it as its own message
        row = s.get(OutboxMessage, send.id)
        assert row is not None
        row.status = OutboxStatus.sent
        s.add(
            ChannelMessage(
                channel="telegram",
                chat_id="5",
                message_id="9",
                incident_id=inc,
                role="incident",
                live=True,
            )
        )
    joined(db, inc, "api", "http://api/")
    assert refresh(db, inc) == 1
    edit = rows(db)[-1]
    assert (edit.method, edit.role, edit.incident_id) == ("edit", "incident", inc)
    assert edit.buttons == [[list(b) for b in r] for r in BUTTONS]  # the buttons stay
    header = edit.text.split("\n\n")[0].split("\n")
    assert header[2].startswith("Related signals (2): http status on http://a&amp;b/ (x2); ")
    assert len(header) == 3  # replaced, not added again
    assert refresh(db, inc) == 0  # nothing new: no edit
    queue.close_question(db, "telegram", chat_id=5, incident_id=inc, text="Resolved")
    joined(db, inc, "late", "http://late/")
    assert refresh(db, inc) == 0  # the question is over: left alone
    db.dispose()


def test_with_related_keeps_the_rest_of_the_text():
    text = with_related("head\nline 2\n\nbody\n\nmore", "Related signals (1): x")
    assert text == "head\nline 2\nRelated signals (1): x\n\nbody\n\nmore"
    again = with_related(text, "Related signals (2): x; y")
    assert again == "head\nline 2\nRelated signals (2): x; y\n\nbody\n\nmore"


def test_the_closed_question_keeps_its_related_signals(tmp_path: Path):
    from guard.notify.fanout import ChannelNotifier
    from guard.notify.plain import PlainMarkup

    db = open_database(f"sqlite:///{tmp_path / 'g.db'}")
    with db.session() as s:
        inc = stored_incident(s).id
    notifier = ChannelNotifier(db, "console", "console", PlainMarkup())
    assert "Related signals" not in notifier.closed_text(inc, "resolved", "healed")
    joined(db, inc, "shop-http", "http://shop:8080/healthz")
    closed = notifier.closed_text(inc, "resolved", "healed")
    head, _, outcome = closed.partition("\n\n")
    assert "Related signals (1): " in head and "http://shop:8080/healthz" in head
    assert "healed" in outcome


async def test_a_question_asked_after_signals_joined_names_them_at_once(tmp_path: Path):
    from guard.notify.base import HumanRequest
    from guard.notify.fanout import ChannelNotifier
    from guard.notify.plain import PlainMarkup

    db = open_database(f"sqlite:///{tmp_path / 'g.db'}")
    with db.session() as s:
        inc = stored_incident(s).id
    joined(db, inc, "shop-http", "http://shop:8080/healthz")
    notifier = ChannelNotifier(db, "console", "console", PlainMarkup())
    await notifier.ask(HumanRequest(inc, "down", "critical", "shop", 1, "evidence"))
    (question,) = rows(db)
    assert "Related signals (1): " in question.text.partition("\n\n")[0]
    assert refresh(db, inc) == 0  # nothing left to edit
