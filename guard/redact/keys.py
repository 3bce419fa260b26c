"""Private keys: a whole PEM/OpenSSH block in one text, and a key logged one line at a time.

A text holding a ``-----BEGIN ... PRIVATE KEY-----`` line loses everything from it to the
matching ``END`` line (or to the end of the text, when the text was cut). A log, though, hands
Guard a key one line per signal, each line with its own timestamp or Docker prefix, so
``KeyLines`` remembers, per source (a monitor and its target), that a key has begun: until its
``END`` line, the base64 at the end of each line from that source is key material, whatever
prefix it has (the first line after the header, 64, 70 or 76 columns, included). A source that
never sends the ``END`` line is let go after ``MAX_BODY_LINES`` lines.

When the ``BEGIN`` line went by unseen (another process logged it, or it came before Guard's
memory of the source), a body line is known by its shape: 64, 70 or 76 columns of key-like
base64 ending a line, after a space (a log prefix). It is replaced, and so is each next line of
that source holding only base64 in the same column, up to the body's last, shorter line.

Tested by ``tests/security/test_redact_keys.py``.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Hashable

from guard.redact.engine import marker
from guard.redact.rules import key_line

MAX_BODY_LINES = 200  # an 8192-bit RSA key is ~100 lines of 64 columns
MAX_SOURCES = 4096  # sources remembered at once (the least recently seen is forgotten)

_ARMOUR = r"-----{} ?[A-Z0-9 ]{{0,40}}PRIVATE KEY(?: BLOCK)?-----"
_BEGIN = re.compile(_ARMOUR.format("BEGIN"))
_END = re.compile(_ARMOUR.format("END"))
_BASE64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
_KEY = marker("private-key")
_WIDTHS = frozenset({64, 70, 76})  # PEM, OpenSSH and PuTTY/MIME body widths
_BY_HEADER = (-1, 0)  # an open key found by its BEGIN line: (column, width) not needed


def redact_blocks(text: str) -> str:
    """``text`` with each private key block (armour included) replaced by one placeholder."""
    if "PRIVATE KEY" not in text:
        return text
    out: list[str] = []
    pos = 0
    while (begin := _BEGIN.search(text, pos)) is not None:
        end = _END.search(text, begin.end())
        out += (text[pos : begin.start()], _KEY)
        pos = len(text) if end is None else end.end()
    out.append(text[pos:])
    return "".join(out)


class KeyLines:
    """Which sources are in the middle of a private key; redacts their body lines."""

    def __init__(self) -> None:
        # source -> (body lines seen, body column, body width); column -1: opened by BEGIN
        self._open: OrderedDict[Hashable, tuple[int, int, int]] = OrderedDict()
        self._lock = threading.Lock()

    def redact(self, source: Hashable, line: str) -> str:
        """``line`` from ``source``, with key material (if a key is open there) replaced."""
        with self._lock:
            state = self._open.get(source)
            if state is not None and state[1] >= 0:
                done = self._shaped(source, line, state)
                if done is not None:
                    return done
                state = None
            if state is None:
                if "PRIVATE KEY" in line and _BEGIN.search(line) and not _END.search(line):
                    self._remember(source, (0, *_BY_HEADER))
                    return line
                found = _body_line(line)
                if found is not None:
                    self._remember(source, (0, *found))
                    return line[: found[0]] + _KEY
                return line
            end = _END.search(line) if "-----END" in line else None
            if end is not None:
                del self._open[source]
                head = line[: end.start()]  # the body's last characters, if they share the line
                head = _body(head) if head[-1:] in _BASE64 else head
                return head + line[end.start() :]
            seen = state[0]
            if seen + 1 >= MAX_BODY_LINES:
                del self._open[source]
            else:
                self._remember(source, (seen + 1, *_BY_HEADER))
            return _body(line)

    def _shaped(self, source: Hashable, line: str, state: tuple[int, int, int]) -> str | None:
        """The next line of a body found by its shape: replaced if it holds only base64 in the
        body's column (a full-width line keeps the key open); None, and forgotten, if not."""
        seen, column, width = state
        value = line[column:].rstrip(" \t\r\n")
        del self._open[source]
        if not (
            4 <= len(value) <= width + 2
            and (column == 0 or line[column - 1] not in _BASE64)
            and all(c in _BASE64 for c in value)
        ):
            return None
        if len(value.rstrip("=")) == width and seen + 1 < MAX_BODY_LINES:
            self._remember(source, (seen + 1, column, width))
        return line[:column] + _KEY

    def _remember(self, source: Hashable, state: tuple[int, int, int]) -> None:
        self._open[source] = state
        self._open.move_to_end(source)
        while len(self._open) > MAX_SOURCES:
            self._open.popitem(last=False)


def _body_line(line: str) -> tuple[int, int] | None:
    """(column, width) of a key body line ending ``line`` after a prefix, if it holds one."""
    stop = len(line.rstrip(" \t\r\n"))
    start = stop
    while start > 0 and line[start - 1] in _BASE64 and stop - start <= 80:
        start -= 1
    value = line[start:stop]
    width = len(value.rstrip("="))
    if width not in _WIDTHS or (start > 0 and line[start - 1] not in " \t") or "=" in value[:width]:
        return None
    return (start, width) if key_line(value[:width]) else None


def _body(line: str) -> str:
    """``line`` with the base64 at its end (a body line's content) replaced."""
    stop = len(line.rstrip(" \t\r\n"))
    start = stop
    while start > 0 and line[start - 1] in _BASE64:
        start -= 1
    if start == stop:
        return line
    return line[:start] + _KEY
