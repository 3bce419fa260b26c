"""The Bot API test server refuses what Telegram refuses, with Telegram's error replies.

The other Telegram tests fail if Guard sends anything the server refuses, so these pin down
what it refuses: over-long text, oversized callback data, and HTML Telegram cannot parse.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.fakes.telegram import TelegramServer
from tests.helpers.telegram import CHAT, TOKEN

pytestmark = pytest.mark.unit


def call(tg: TelegramServer, method: str, **params: Any) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(
        f"{tg.url}/bot{TOKEN}/{method}",
        data=json.dumps(params).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as reply:
            return reply.status, json.load(reply)
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.load(exc)


def refused(tg: TelegramServer, method: str, **params: Any) -> str:
    status, reply = call(tg, method, **params)
    assert status == 400, reply
    assert set(reply) == {"ok", "error_code", "description"}
    assert reply["ok"] is False and reply["error_code"] == 400
    description = str(reply["description"])
    assert description.startswith("Bad Request: ")
    return description


def keyboard(data: str) -> dict[str, Any]:
    return {"inline_keyboard": [[{"text": "press", "callback_data": data}]]}


def test_text_over_4096_characters_is_too_long(tg):
    assert (
        refused(tg, "sendMessage", chat_id=CHAT, text="x" * 4097)
        == "Bad Request: message is too long"
    )
    # Telegram counts the text after entity parsing: markup and entities do not count
    for text in ("x" * 4096, "<b>" + "x" * 4096 + "</b>", "&amp;" * 4096):
        assert call(tg, "sendMessage", chat_id=CHAT, text=text, parse_mode="HTML")[0] == 200
    assert (
        refused(tg, "sendMessage", chat_id=CHAT, text="&lt;" * 4097, parse_mode="HTML")
        == "Bad Request: message is too long"
    )
    _, sent = call(tg, "sendMessage", chat_id=CHAT, text="short")
    mid = sent["result"]["message_id"]
    assert (
        refused(tg, "editMessageText", chat_id=CHAT, message_id=mid, text="y" * 5000)
        == "Bad Request: message is too long"
    )
    assert refused(tg, "sendMessage", chat_id=CHAT, text="") == "Bad Request: message text is empty"
    assert [m["text"] for m in tg.bot_messages("short")] == ["short"]  # the edit was refused
    assert [r["method"] for r in tg.refused] == ["sendMessage"] * 2 + [
        "editMessageText",
        "sendMessage",
    ]
    tg.refused.clear()


def test_callback_data_over_64_bytes_is_invalid(tg):
    assert (
        call(tg, "sendMessage", chat_id=CHAT, text="ok", reply_markup=keyboard("a" * 64))[0] == 200
    )
    for data in ("a" * 65, "é" * 33, ""):  # é is two bytes in UTF-8
        assert (
            refused(tg, "sendMessage", chat_id=CHAT, text="buttons", reply_markup=keyboard(data))
            == "Bad Request: BUTTON_DATA_INVALID"
        )
    _, sent = call(tg, "sendMessage", chat_id=CHAT, text="ok")
    assert (
        refused(
            tg,
            "editMessageText",
            chat_id=CHAT,
            message_id=sent["result"]["message_id"],
            text="edited",
            reply_markup=keyboard("b" * 100),
        )
        == "Bad Request: BUTTON_DATA_INVALID"
    )
    tg.refused.clear()


@pytest.mark.parametrize(
    ("html", "why"),
    [
        ("<b>bold", 'Can\'t find end tag corresponding to start tag "b"'),
        ("<b><i>x</b></i>", 'Unmatched end tag at byte offset 7, expected "</i>", found "</b>"'),
        ("x</b>", "Unexpected end tag at byte offset 1"),
        ("<tag> from a log", 'Unsupported start tag "tag" at byte offset 0'),
        ("a < b", 'Unsupported start tag "" at byte offset 2'),
        ("é <pre", "Unclosed start tag at byte offset 3"),
        ("<span>x</span>", 'Tag "span" must have class "tg-spoiler" at byte offset 0'),
    ],
)
def test_html_telegram_cannot_parse_is_refused(tg, html, why):
    assert (
        refused(tg, "sendMessage", chat_id=CHAT, text=html, parse_mode="HTML")
        == f"Bad Request: can't parse entities: {why}"
    )
    assert call(tg, "sendMessage", chat_id=CHAT, text=html)[0] == 200  # as plain text: fine
    tg.refused.clear()


def test_html_telegram_accepts_is_sent(tg):
    for html in (
        "<b>a</b> &amp; <i>b</i> &lt;tag&gt; & <code>c</code>",
        '<pre>x</pre><a href="https://e.com/?a=1&amp;b=2">link</a>',
        '<b><i>x</i></b> <span class="tg-spoiler">s</span> &#128293; &ge;',
    ):
        status, reply = call(tg, "sendMessage", chat_id=CHAT, text=html, parse_mode="HTML")
        assert status == 200 and reply["ok"] is True, reply
