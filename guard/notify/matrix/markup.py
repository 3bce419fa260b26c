"""Matrix's ``Markup``: Matrix clients render the HTML subset Telegram's markup writes
(``org.matrix.custom.html``), so Matrix says things as Telegram does; ``content`` turns it into
an event's ``body`` and ``formatted_body``. Tested by tests/matrix/test_content.py."""

from __future__ import annotations

from guard.notify.telegram.markup import HtmlMarkup


class MatrixMarkup(HtmlMarkup):
    """The HTML of Telegram's markup, posted as ``formatted_body``."""
