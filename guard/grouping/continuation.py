"""Lines that carry another line's text: PostgreSQL's ``STATEMENT:`` (and ``QUERY:``).

Such a line holds a client's query, not a message of the daemon's source, and the queries of
two faults can differ in one word (``UPDATE items SET qty = ...`` after a check violation,
``UPDATE stock SET qty = ...`` after a not-null one): by likeness they are one template. What
tells them apart is the line they continue, the last *primary* line of the same writer (the
pid in PostgreSQL's prefix; ``DETAIL:``, ``HINT:``, ``CONTEXT:`` lines in between are asides).
A format that knows such lines names up to three groups in its pattern: ``continues`` (the level
of a line that continues; required), ``aside`` (one that neither continues nor is primary) and
``writer`` (without it, the source has one writer);
the continuing line's ``event`` key is then its level and the gist of the primary line, so its
template never takes the statements of another fault.
"""

from __future__ import annotations

import re

GIST_WORDS = 3  # plain words of the primary line kept in the key: "ERROR-duplicate-key-value"
WRITERS = 1024  # writers remembered (PostgreSQL backends come and go; a bound, not a leak)
_PLAIN = re.compile(r"[A-Za-z]+")


def gist(level: str, message: str) -> str:
    """The key of a primary line: its level and first plain words, up to the first value
    (``permission denied for`` of ``permission denied for table secrets``)."""
    words = [level]
    for token in message.split()[:GIST_WORDS]:
        if not _PLAIN.fullmatch(token):
            break
        words.append(token)
    return "-".join(words)


class Continuations:
    """The last primary line of each writer of one source."""

    def __init__(self) -> None:
        self._last: dict[str, str] = {}

    @staticmethod
    def applies(pattern: re.Pattern[str]) -> bool:
        """Whether lines of ``pattern`` may continue others (it names ``continues``)."""
        return "continues" in pattern.groupindex

    def event(self, found: re.Match[str]) -> str:
        """The ``event`` key of a line of such a pattern: ``""`` (none) for a primary line or an
        aside, the level and the primary's gist for a continuing line."""
        groups = found.groupdict()  # a pattern of the user's may name only some of them
        writer = groups.get("writer") or ""
        continues = groups.get("continues")
        if continues:
            return f"{continues}·{self._last.get(writer, '')}"
        if not groups.get("aside"):
            if len(self._last) >= WRITERS and writer not in self._last:
                self._last.clear()
            self._last[writer] = gist(groups.get("level") or "", groups.get("message") or "")
        return ""
