"""Conversation memory in a real SQLite store: what each chat said, in order, per chat."""

from __future__ import annotations

import pytest

from guard.memory.conversation import history, record_message
from tests.conftest import GuardHome

pytestmark = pytest.mark.unit


def test_history_is_per_chat_oldest_first_and_keeps_the_newest_when_limited(
    home: GuardHome,
) -> None:
    db = home.database()
    for n in range(5):
        record_message(db, chat="ops", direction="in", author="alice", text=f"ops {n}")
    record_message(
        db, chat="C0SHOP", direction="out", author="guard", text="shop", incident_id=7, id="42"
    )
    assert [m.text for m in history(db, "ops")] == [f"ops {n}" for n in range(5)]
    assert [m.text for m in history(db, "ops", limit=2)] == ["ops 3", "ops 4"]
    (shop,) = history(db, "C0SHOP")
    assert (shop.direction, shop.author, shop.incident_id, shop.meta) == (
        "out",
        "guard",
        7,
        {"id": "42"},
    )
    assert history(db, "nobody") == []
