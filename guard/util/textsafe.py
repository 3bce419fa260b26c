"""Text from logs, made safe to show: no terminal control sequences, no bidi tricks.

A log line is written by whoever can write to a watched file. Printed raw, an ``ESC`` sequence
in it can set the terminal's title, clear the screen or hide the lines before it; bidi overrides
make a command read differently from what it is. Everything Guard shows a person (the CLI,
a chat) passes through ``printable`` first. Markup is a separate concern: the CLI prints data
with markup off, and a chat channel escapes it for its markup (``Markup.escape``).
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls, and the bidi controls (marks, embeddings,
# overrides, isolates).
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: object, *, newlines: bool = True) -> str:
    """``text`` without control characters (each becomes ``�`` where it hid something)."""
    out = _UNSAFE.sub("\ufffd", str(text))
    return out if newlines else out.replace("\n", " ")


def line_tail(text: str, limit: int) -> str:
    """The last ``limit`` characters of ``text``, from the start of a line: evidence cut to its
    last N characters otherwise opens with half a line nobody can read. A last line longer
    than ``limit`` is cut as it is (there is no line start to go to)."""
    if len(text) <= limit:
        return text
    tail = text[-limit:]
    if text[-limit - 1] == "\n":
        return tail
    cut = tail.find("\n")
    return tail[cut + 1 :] if 0 <= cut < len(tail) - 1 else tail
