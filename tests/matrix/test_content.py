"""What Guard posts in a room: HTML in ``formatted_body``, the same as plain text in ``body``,
the buttons written under both; a reply and an ``m.replace`` edit shaped as the spec says."""

from __future__ import annotations

import pytest

from guard.notify.matrix import content
from guard.notify.matrix.buttons import BUTTONS
from guard.notify.matrix.markup import MatrixMarkup

pytestmark = pytest.mark.unit


def test_html_and_plain_text_and_buttons() -> None:
    m = MatrixMarkup()
    text = f"{m.bold('Incident #3')}: {m.escape('<web> & co')}\n{m.code('docker.restart api')}"
    got = content.message(text, [[("✖ Deny", "d1")]])
    assert got["format"] == "org.matrix.custom.html" and got["msgtype"] == "m.text"
    assert got["formatted_body"].startswith(
        "<b>Incident #3</b>: &lt;web&gt; &amp; co<br><code>docker.restart api</code>"
    )
    assert got["body"].startswith("Incident #3: <web> & co\ndocker.restart api\n\n")
    assert got[BUTTONS][0]["data"] == "d1"
    assert content.message("x", [], notice=True)["msgtype"] == "m.notice"


def test_a_reply_and_an_edit() -> None:
    new = content.message("<b>Resolved</b>", [])
    edit = content.edit(new, "$q")
    assert edit["m.relates_to"] == {"rel_type": "m.replace", "event_id": "$q"}
    assert edit["m.new_content"] == new and edit["body"] == "* Resolved"
    assert content.reply(new, "$q")["m.relates_to"] == {"m.in_reply_to": {"event_id": "$q"}}
    assert content.same(new, content.message("<b>Resolved</b>", []))
    assert not content.same(new, content.message("<b>Resolved</b>", [[("✖ Deny", "d1")]]))
