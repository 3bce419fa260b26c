"""Find the lines of a log block that match an ordered list of rules, fast, with Python semantics.

A log monitor scans megabytes of mostly boring lines. Running every rule's Python regex on every
line costs ``lines x rules`` regex calls; this module instead runs **one** RE2 search (a DFA, no
backtracking) over a whole block for the alternation of all the rules, and only on the few
lines where it finds something does it run the rules, in order, with Python's ``re``. The
answer therefore always has Python's semantics ("the first rule that matches wins", a rule's
``ignore_case``); RE2 only decides which lines are worth asking.

That is sound only where RE2 can never miss a line that Python would match, so:

- a rule RE2 cannot compile (backreferences, lookarounds, atomic groups, ``(?x)``...) or whose
  meaning differs in RE2 (``\\A``, ``\\Z``, ``\\z``, ``{,n}``, POSIX ``[:classes:]``) turns the
  prefilter off: every line is then matched in Python (correct, and as fast as before);
- the prefilter runs only over lines of printable ASCII and tabs. Lines with other bytes (UTF-8
  text, NUL, a trailing ``\\r``, ``\\v`` and the ``\\x1c-\\x1f`` that Python's ``\\s`` matches but
  RE2's does not) are matched in Python one by one, and so is a block holding a line longer
  than the match limit (cutting a line can create a match at its new end).

RE2 false positives cost only a Python check of one line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

import re2

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.max_mem = 64 << 20  # room for the DFA of ~100 alternated rules
_RE2_OPTIONS.log_errors = False
# Textual marks of constructs RE2 reads differently from Python (checked before compiling).
_DIVERGENT = re.compile(r"\\[AZz]|\{,|\[:")
# Bytes that make a line ineligible for the RE2 prefilter (everything but \t, \n, 0x20-0x7e).
_UNSAFE_BYTE = re.compile(rb"[^\t\n\x20-\x7e]")
_UNSAFE_ASCII = (b"\x00", b"\r", b"\x0b", b"\x1c", b"\x1d", b"\x1e", b"\x1f", b"\x7f")

Match = tuple[int, str]  # (index of the first matching rule, the line's text)


def _re2_source(pattern: str, ignore_case: bool) -> str | None:
    """The rule as an RE2 group, or None if RE2 must not be trusted with it."""
    if _DIVERGENT.search(pattern):
        return None
    source = f"(?i:{pattern})" if ignore_case else f"(?:{pattern})"
    try:
        re2.compile(source, _RE2_OPTIONS)
    except re2.error:
        return None
    return source


def _safe(block: bytes) -> bool:
    return block.isascii() and not any(c in block for c in _UNSAFE_ASCII)


def _has_long_line(block: bytes, limit: int) -> bool:
    """Whether some line of ``block`` is longer than ``limit`` bytes.

    Such a line holds a whole newline-free window of ``limit // 2`` bytes aligned on a multiple
    of ``limit // 2``, so checking those windows (a memchr each) is enough.
    """
    if len(block) <= limit:
        return False
    step = limit // 2
    return any(block.find(b"\n", at, at + step) < 0
               for at in range(0, len(block) - step + 1, step))


class LineMatcher:
    """Ordered rules ``(pattern, ignore_case)``; finds each line's first matching rule."""

    def __init__(self, rules: Sequence[tuple[str, bool]]) -> None:
        self._rules = [re.compile(p, re.IGNORECASE if ic else 0) for p, ic in rules]
        sources = [_re2_source(p, ic) for p, ic in rules]
        self._prefilter: Any = None
        if sources and all(s is not None for s in sources):
            try:
                self._prefilter = re2.compile("(?m)" + "|".join(sources),  # type: ignore[arg-type]
                                              _RE2_OPTIONS)
            except re2.error:  # e.g. two rules name a group alike
                self._prefilter = None

    @property
    def prefiltered(self) -> bool:
        """Whether blocks are searched with RE2 first (False: every line goes to Python)."""
        return self._prefilter is not None

    def first(self, text: str) -> int | None:
        """The index of the first rule that matches ``text``, with Python's ``re``."""
        for index, regex in enumerate(self._rules):
            if regex.search(text):
                return index
        return None

    def line(self, raw: bytes) -> Match | None:
        """Match one line (its newline, if any, is not part of it)."""
        text = raw.rstrip(b"\r\n").decode("utf-8", "replace").replace("\x00", "\ufffd")
        index = self.first(text)
        return None if index is None else (index, text)

    def scan(self, block: bytes, limit: int) -> Iterator[Match]:
        """Every matching line of ``block`` (whole lines; each matched on its first ``limit``
        bytes), in order."""
        if self._prefilter is None or _has_long_line(block, limit):
            yield from self._each_line(block, 0, len(block), limit)
        elif _safe(block):
            yield from self._candidates(block, 0, len(block), limit)
        else:
            yield from self._mixed(block, limit)

    def _mixed(self, block: bytes, limit: int) -> Iterator[Match]:
        """Prefilter the safe stretches; match lines with unsafe bytes in Python."""
        pos, end = 0, len(block)
        while pos < end:
            bad = _UNSAFE_BYTE.search(block, pos)
            if bad is None:
                break
            i = block.rfind(b"\n", pos, bad.start())
            start = pos if i < 0 else i + 1
            j = block.find(b"\n", bad.start())
            stop = end if j < 0 else j + 1
            yield from self._candidates(block, pos, start, limit)
            yield from self._each_line(block, start, stop, limit)
            pos = stop
        yield from self._candidates(block, pos, end, limit)

    def _candidates(self, block: bytes, pos: int, end: int, limit: int) -> Iterator[Match]:
        search = self._prefilter.search
        while pos < end:
            hit = search(block, pos, end)
            if hit is None or hit.start() >= end:  # nothing, or an empty match after the last line
                return
            i = block.rfind(b"\n", pos, hit.start())
            start = pos if i < 0 else i + 1
            j = block.find(b"\n", hit.start(), end)
            pos = end if j < 0 else j + 1
            if (found := self.line(block[start:min(pos, start + limit)])) is not None:
                yield found

    def _each_line(self, block: bytes, pos: int, end: int, limit: int) -> Iterator[Match]:
        while pos < end:
            j = block.find(b"\n", pos, end)
            stop = end if j < 0 else j + 1
            if (found := self.line(block[pos:min(stop, pos + limit)])) is not None:
                yield found
            pos = stop
