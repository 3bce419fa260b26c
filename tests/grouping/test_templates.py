"""The template book (guard/grouping/templates.py): a folded signal counts all its lines."""

from __future__ import annotations

import pytest

from guard.grouping.drain import SETTLED
from guard.grouping.templates import TemplateBook
from guard.store.db import open_database

pytestmark = pytest.mark.unit

AGENT = "Session: <num>_<num> initialized by client WindowsUpdateAgent."
SPP = "Session: <num>_<num> initialized by client SPP."


@pytest.mark.parametrize("folded", [True, False], ids=["one signal", "line by line"])
def test_a_signal_of_many_folded_lines_settles_its_template_as_they_would(folded: bool) -> None:
    """A monitor folds identical lines into one signal with a count: ``guard run`` must settle
    a template's words as the lines one by one would (the benchmark's replay)."""
    db = open_database("sqlite://")
    book = TemplateBook()
    with db.session() as session:
        book.begin(session)
        if folded:
            agent, _ = book.assign(session, AGENT, lines=SETTLED)
        else:
            (agent,) = {book.assign(session, AGENT)[0] for _ in range(SETTLED)}
        other, new = book.assign(session, SPP)
    db.dispose()
    assert new and other != agent
