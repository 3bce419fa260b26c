"""The chat HTML (``guard.notify.html``) is one markup for every channel that speaks it:
Telegram's and Matrix's markups render the same, and neither imports the other's folder."""

from __future__ import annotations

import ast

import pytest

from guard.notify import html
from guard.notify.matrix.markup import MatrixMarkup
from guard.notify.telegram.markup import HtmlMarkup as TelegramMarkup
from tests.conftest import REPO

pytestmark = pytest.mark.unit


def test_a_cut_closes_the_tags_it_leaves_open_and_never_splits_an_entity() -> None:
    text = "<pre>" + html.esc("a & b <c>\n" * 1000) + "</pre>"
    cut = html.cut(text, 500, more=html.pointer(3))
    assert len(cut) <= 500 and cut.count("<pre>") == cut.count("</pre>") == 1
    assert cut.endswith("guard incidents show 3</code>") and "&amp" in cut
    assert all(part.split(";")[0] in ("amp", "lt", "gt") for part in cut.split("&")[1:])


def test_telegram_and_matrix_render_the_chat_html_alike() -> None:
    tg, mx = TelegramMarkup(), MatrixMarkup()
    assert isinstance(tg, html.HtmlMarkup) and isinstance(mx, html.HtmlMarkup)
    assert tg.header(4, "db <down>", "error", "pg", 3) == mx.header(
        4, "db <down>", "error", "pg", 3
    )
    assert mx.bold("a<b") == "<b>a&lt;b</b>" and mx.limit == tg.limit == html.LIMIT


def test_matrix_imports_nothing_of_another_channel() -> None:
    for path in (REPO / "guard" / "notify" / "matrix").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith(
                    ("guard.notify.telegram", "guard.notify.slack")
                ), (path.name, node.module)
