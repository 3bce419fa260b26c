"""Read ``journalctl --output=json`` one entry at a time, in bounded memory.

``journalctl`` prints one JSON object a line. ``MESSAGE`` is a string, or an array of byte
values when it is not valid UTF-8; with ``--all`` (needed: without it a field over 4096 bytes
comes out as ``null``) it may be megabytes long. ``Lines`` keeps at most ``head`` bytes of a
line and its last ``TAIL`` bytes; an entry cut that way is parsed from what was kept (its
small fields, the start of its ``MESSAGE``), so one huge message costs a bounded buffer and
still counts, cut for matching like a long line in a log file.

The target of an entry is the unit it is about (``UNIT``, ``USER_UNIT``: systemd's own messages
about a unit), else the unit that wrote it, else its syslog identifier or command.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

TAIL = 4096  # bytes kept of the end of an over-long line (its last fields)
TARGETS = ("UNIT", "USER_UNIT", "_SYSTEMD_UNIT", "_SYSTEMD_USER_UNIT", "SYSLOG_IDENTIFIER", "_COMM")
FIELDS = ("MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER", "_COMM", "_PID", *TARGETS[:4])
_SMALL = re.compile(rb'"([A-Z0-9_]+)" ?: ?"((?:[^"\\]|\\.){0,1024})"')
_MESSAGE = re.compile(rb'"MESSAGE" ?: ?(?:"((?:[^"\\]|\\.)*)|\[([0-9, ]*))')
_PARTIAL_ESCAPE = re.compile(rb"\\u[0-9a-fA-F]{0,3}$")


@dataclass(frozen=True)
class Entry:
    """One journal entry, as far as a log monitor cares."""

    cursor: str
    realtime: int  # microseconds since the epoch
    target: str
    ident: str  # the program that wrote it (syslog identifier, command)
    lines: list[bytes]  # MESSAGE split into lines, at most ``limit`` + 1 bytes in all


class Lines:
    """Split a byte stream into lines of at most ``head`` bytes (plus the last ``TAIL`` bytes
    of a longer one): ``feed`` returns ``(line, None)`` or ``(its head, its tail)``."""

    def __init__(self, head: int) -> None:
        self.head = head
        self._buf = bytearray()
        self._tail: bytes | None = None  # set once the current line is over ``head``

    def feed(self, chunk: bytes) -> list[tuple[bytes, bytes | None]]:
        out: list[tuple[bytes, bytes | None]] = []
        pieces = chunk.split(b"\n")
        for i, piece in enumerate(pieces):
            if self._tail is not None:
                self._tail = (self._tail + piece)[-TAIL:]
            elif len(self._buf) + len(piece) <= self.head:
                self._buf += piece
            else:
                room = self.head - len(self._buf)
                self._buf += piece[:room]
                self._tail = piece[room:][-TAIL:]
            if i < len(pieces) - 1:
                out.append((bytes(self._buf), self._tail))
                self._buf, self._tail = bytearray(), None
        return out

    @property
    def buffered(self) -> int:
        return len(self._buf) + len(self._tail or b"")


def parse(line: bytes, tail: bytes | None, limit: int) -> Entry | None:
    """The entry of one line of JSON output (``tail``: the line was cut; None: not an entry)."""
    if tail is None:
        try:
            doc = json.loads(line)
        except ValueError:
            return None
        if not isinstance(doc, dict):
            return None
        fields = doc  # only its string values are read below
        text = _message(doc.get("MESSAGE"))
    else:
        fields, text = _salvage(line, tail)
    cursor = _text(fields, "__CURSOR")
    if not cursor:
        return None
    target = next((t for k in TARGETS if (t := _text(fields, k))), "journal")
    ident = _text(fields, "SYSLOG_IDENTIFIER") or _text(fields, "_COMM")
    try:
        realtime = int(_text(fields, "__REALTIME_TIMESTAMP") or 0)
    except ValueError:
        realtime = 0
    text = text[: limit + 1]  # one byte over: the matcher says the line was cut
    lines = [part.rstrip(b"\r") for part in text.split(b"\n")]
    return Entry(cursor, realtime, target[:256], ident[:256], lines)


def _text(fields: dict[str, Any], name: str) -> str:
    value = fields.get(name)
    return value if isinstance(value, str) else ""


def _message(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8", "replace")
    if isinstance(value, list):
        return bytes(b for b in value if isinstance(b, int) and 0 <= b <= 255)
    return b""


def _salvage(head: bytes, tail: bytes) -> tuple[dict[str, str], bytes]:
    """The small string fields and the start of ``MESSAGE`` of a line cut after ``head``."""
    fields: dict[str, str] = {}
    for part in (head, tail):
        for m in _SMALL.finditer(part):
            name = m.group(1).decode()
            if name != "MESSAGE":
                fields.setdefault(name, _unescape(m.group(2)))
    found = _MESSAGE.search(head) or _MESSAGE.search(tail)
    if found is None:
        return fields, b""
    if found.group(1) is not None:
        return fields, _unescape(found.group(1)).encode("utf-8", "replace")
    numbers = found.group(2).replace(b" ", b"").split(b",")
    if not found.group(2).rstrip().endswith(b","):
        numbers = numbers[:-1]  # the last may be cut
    return fields, bytes(n for n in (int(x) for x in numbers if x.isdigit()) if n <= 255)


def _unescape(raw: bytes) -> str:
    """A JSON string's content, possibly cut short (in the middle of an escape)."""
    raw = _PARTIAL_ESCAPE.sub(b"", raw)
    if (len(raw) - len(raw.rstrip(b"\\"))) % 2:
        raw = raw[:-1]
    try:
        value = json.loads(b'"' + raw + b'"')
    except ValueError:
        return raw.decode("utf-8", "replace")
    return value if isinstance(value, str) else ""
