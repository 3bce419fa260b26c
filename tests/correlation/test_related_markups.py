"""``guard.notify.related`` knows no channel: each channel registers the ``Markup`` its rows are
escaped and cut with (Telegram's HTML from its own package); a channel that registered none
gets the related line as plain printable text."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from guard.notify import related
from guard.notify.outbox import queue
from guard.notify.plain import PlainMarkup
from guard.notify.related import refresh
from guard.store.db import Database, open_database
from tests.correlation.test_related_message import joined, rows
from tests.helpers.agent import stored_incident

QUESTION = "Incident #1 [critical]: down\nTarget: shop\n\nWhat now?"


class Shouting(PlainMarkup):
    """A channel that shows everything in capitals, 116 characters at most."""

    def __init__(self) -> None:
        super().__init__(limit=116)

    def escape(self, text: object) -> str:
        return super().escape(text).upper()


def asked(tmp_path: Path, channel: str) -> tuple[Database, int]:
    """An incident asked about on ``channel`` (the question still queued), a signal joined."""
    db = open_database(f"sqlite:///{tmp_path / 'g.db'}")
    with db.session() as s:
        inc = int(stored_incident(s).id)
    queue.enqueue(
        db, channel, method="send", chat_id=5, text=QUESTION, incident_id=inc, role="incident"
    )
    joined(db, inc, "web", "http://shop/\x1b[31mhealthz&x")
    return db, inc


@pytest.mark.unit
def test_a_channel_escapes_and_cuts_its_rows_with_the_markup_it_registered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(related, "MARKUPS", {})
    related.register("shout", Shouting())
    db, inc = asked(tmp_path, "shout")
    assert refresh(db, inc) == 0  # queued: the question goes out with the line
    (send,) = rows(db)
    assert "RELATED SIGNALS (1): HTTP STATUS ON HTTP://SHOP/" in send.text  # its escaping
    assert len(send.text) <= 116 and send.text.endswith("\n…\n")  # and its cut
    db.dispose()


@pytest.mark.unit
def test_a_channel_that_registered_no_markup_gets_plain_printable_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(related, "MARKUPS", {})
    db, inc = asked(tmp_path, "console")
    assert refresh(db, inc) == 0
    (send,) = rows(db)
    line = send.text.split("\n")[2]
    assert line.startswith("Related signals (1): http status on http://shop/")
    assert "\x1b" not in line and "healthz&x (x2)" in line  # control gone, nothing escaped
    assert send.text.endswith("\n\nWhat now?")  # uncut
    db.dispose()


@pytest.mark.unit
def test_telegram_registers_its_html_markup_under_its_channel_name() -> None:
    from guard.notify.telegram.channel import NAME
    from guard.notify.telegram.markup import HtmlMarkup

    assert isinstance(related.MARKUPS[NAME], HtmlMarkup)


def test_the_related_modules_import_no_channel() -> None:
    code = (
        "import sys, guard.notify.related, guard.notify.relatedline; "
        "print(sorted(m for m in sys.modules if m.startswith('guard.notify.telegram')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"
