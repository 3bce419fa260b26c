"""Matrix's ``Markup``: Matrix clients render the chat HTML (``org.matrix.custom.html``), so
Matrix says things in ``guard.notify.html``'s markup; ``content`` turns it into an event's
``body`` and ``formatted_body``. Tested by tests/matrix/test_content.py."""

from __future__ import annotations

from guard.notify.html import HtmlMarkup


class MatrixMarkup(HtmlMarkup):
    """The chat HTML, posted as ``formatted_body``."""
