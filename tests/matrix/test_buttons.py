"""Buttons on Matrix: a reaction key from the label when no other button has it, a code from
the data, both written under the message and read back from the bot's own content (its latest
edit's); a key or code that is none of the message's presses nothing."""

from __future__ import annotations

import pytest

from guard.notify.matrix import buttons as kb
from guard.notify.matrix import content

pytestmark = pytest.mark.unit

QUESTION = [[("▶ Run proposal", "a1")], [("✍ Send a fix", "fix:3"), ("✖ Deny", "d1")]]


def test_keys_from_labels_codes_from_data() -> None:
    shown = kb.buttons(QUESTION)
    assert [(b.key, b.data) for b in shown] == [("✅", "a1"), ("✍️", "fix:3"), ("❌", "d1")]
    assert len({b.code for b in shown}) == 3 and all(len(b.code) == 6 for b in shown)
    assert kb.code("a1") == shown[0].code  # the same data, the same code


def test_a_key_two_buttons_share_is_no_reaction_only_codes() -> None:
    grouped = [[("▶ Run #1", "a1"), ("✖ Deny #1", "d1")], [("▶ Run #2", "a2")]]
    shown = kb.buttons(grouped)
    assert [b.key for b in shown] == ["", "❌", ""]
    plain, _ = kb.lines(shown)
    assert f"▶ Run #1: reply {kb.code('a1')}" in plain


def test_presses_by_key_and_by_code_from_the_stored_content() -> None:
    posted = content.message("<b>Incident #3</b>", QUESTION)
    shown = kb.stored(posted)
    assert kb.by_key(shown, "✅") == "a1"
    assert kb.by_key(shown, "✍") == "fix:3"  # without the emoji variation selector too
    assert kb.by_key(shown, "👍") == ""  # no such button
    assert kb.by_code(shown, f"{kb.code('d1')}") == "d1"
    assert kb.by_code(shown, f"ok {kb.code('d1')} please") == "d1"
    assert kb.by_code(shown, "DOCKER restart api") is None  # a reply, not a code
    edited = content.edit(content.message("closed", []), "$q")
    assert kb.stored(edited) == []  # the latest edit has no buttons left
