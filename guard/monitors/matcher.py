"""Find the lines of a log block that match an ordered list of rules, fast, with Python semantics.

A log monitor scans megabytes of mostly boring lines. Running every rule's regex on every line
costs ``lines x rules`` regex calls; this module instead runs **one** multi-pattern scan over a
whole block, and only on the few lines where it finds something does it ask the rules, in order,
through ``guard.util.saferegex.RuleSet``: RE2 wherever its answer is exactly Python's, Python's
``re`` only for what RE2 lacks, in a worker process under a time budget. The answer therefore
always has Python's semantics ("the first rule that matches wins", a rule's ``ignore_case``) and a
bounded cost per line; no hostile line can hold the GIL (and so the event loop) for long. Lines
longer than the limit are matched on their first ``limit`` bytes, and the match says so
(``Match.cut``). Two prefilter engines, best first:

- **Hyperscan** (SIMD, all rules at once; x86-64 only) reports the end of every match of every
  rule. A rule that can match the empty string is left to RE2 (Hyperscan does not report
  zero-width matches), and so is a block whose scan reports more than ``HS_STORM`` matches (a
  rule that matches nearly everywhere costs a callback per match; RE2 costs one per line).
- **RE2** (a DFA, no backtracking) searches the alternation of all the rules.

That is sound only where the prefilter can never miss a line that Python would match, so:

- a rule RE2 cannot compile (backreferences, lookarounds, atomic groups, ``(?x)``...) or whose
  meaning differs in RE2 or Hyperscan (``\\A``, ``\\Z``, ``\\z``, ``{,n}``, POSIX
  ``[:classes:]``) turns the prefilter off: every line is then asked of the rule set (the other
  rules still in RE2; that one in the budgeted Python worker);
- the prefilter runs only over lines of printable ASCII and tabs. Lines with other bytes (UTF-8
  text, NUL, a trailing ``\\r``, ``\\v`` and the ``\\x1c-\\x1f`` that Python's ``\\s`` matches but
  RE2's does not) are asked of the rule set in one batch per stretch, and so is a block holding
  a line longer than the match limit (cutting a line can create a match at its new end).

False positives (a match that crosses a newline, say) cost only one more check of one line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Literal

import re2
from loguru import logger

from guard.util.saferegex import RE2_OPTIONS as _RE2_OPTIONS
from guard.util.saferegex import RuleSet
from guard.util.saferegex import re2_source as _re2_source


def _import_hyperscan() -> Any:
    try:
        import hyperscan
    except ImportError:  # not installed, or no wheel for this machine
        return None
    return hyperscan


hyperscan = _import_hyperscan()

Engine = Literal["hyperscan", "re2", "python"]
HS_STORM = 4096  # matches reported for one block before it is handed to RE2 instead
# a stretch shorter than this is prefiltered by RE2: a check that reads a few lines never builds
# the Hyperscan database (its compiler's pages and a database and scratch space per monitor cost
# ~7 MB at 200 log monitors); the first larger one builds it, once
HS_FROM = 1 << 16

# Bytes that make a line ineligible for the RE2 prefilter (everything but \t, \n, 0x20-0x7e).
_UNSAFE_BYTE = re.compile(rb"[^\t\n\x20-\x7e]")
_UNSAFE_ASCII = (b"\x00", b"\r", b"\x0b", b"\x1c", b"\x1d", b"\x1e", b"\x1f", b"\x7f")


class Match(tuple[int, str]):
    """``(index of the first matching rule, the line's text)``; ``cut``: the line was longer
    than the limit and only its start was matched; ``start``/``stop``: where the line (with its
    newline) is in the block ``scan`` was given."""

    cut: bool = False
    start: int = 0
    stop: int = 0


def _match(index: int, text: str, cut: bool, start: int = 0, stop: int = 0) -> Match:
    found = Match((index, text))
    found.cut, found.start, found.stop = cut, start, stop
    return found


def _can_be_empty(pattern: str, ignore_case: bool) -> bool:
    """Whether the rule can match zero characters (``x*``, ``^``, ``\\b``)."""
    try:
        parsed = re._parser.parse(pattern, re.IGNORECASE if ignore_case else 0)  # type: ignore[attr-defined]
        return bool(parsed.getwidth()[0] == 0)
    except Exception:  # a private API: when in doubt, say it can
        return True


def _hyperscan_database(rules: Sequence[tuple[str, bool]]) -> Any:
    """All the rules in one Hyperscan block-mode database, or None where it must not be used."""
    if hyperscan is None or any(_can_be_empty(p, ic) for p, ic in rules):
        return None
    flags = [
        hyperscan.HS_FLAG_MULTILINE | (hyperscan.HS_FLAG_CASELESS if ic else 0) for _, ic in rules
    ]
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    try:
        database.compile(
            expressions=[p.encode() for p, _ in rules], ids=list(range(len(rules))), flags=flags
        )
    except Exception as exc:  # a construct Hyperscan lacks, or a CPU it cannot run on
        logger.debug("log rules stay with RE2 (Hyperscan: {})", exc)
        return None
    return database


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
    return any(block.find(b"\n", at, at + step) < 0 for at in range(0, len(block) - step + 1, step))


class LineMatcher:
    """Ordered rules ``(pattern, ignore_case)``; finds each line's first matching rule."""

    def __init__(
        self,
        rules: Sequence[tuple[str, bool]],
        *,
        engines: Sequence[Engine] = ("hyperscan", "re2"),
        hyperscan_from: int = HS_FROM,
    ) -> None:
        """``hyperscan_from``: the shortest stretch of a block that Hyperscan prefilters."""
        self._rules = RuleSet(rules)
        self._hs_rules: list[tuple[str, bool]] | None = None
        self._hs_from = hyperscan_from
        sources = [_re2_source(p, ic) for p, ic in rules]
        self._prefilter: Any = None
        self._hyperscan: Any = None
        self._scratch: Any = None
        if not sources or any(s is None for s in sources):
            return  # RE2's screening of the rules also guards Hyperscan
        if "re2" in engines or "hyperscan" in engines:
            try:
                self._prefilter = re2.compile(
                    "(?m)" + "|".join(sources),  # type: ignore[arg-type]
                    _RE2_OPTIONS,
                )
            except re2.error:  # e.g. two rules name a group alike
                return
        self._hs_rules = list(rules) if "hyperscan" in engines else None

    def _hyperscan_ready(self) -> bool:
        """Whether Hyperscan prefilters (its database built on the first call that needs it)."""
        if self._hs_rules is not None:
            self._hyperscan = _hyperscan_database(self._hs_rules)
            self._hs_rules = None
            if self._hyperscan is not None:
                self._scratch = hyperscan.Scratch(self._hyperscan)
        return self._hyperscan is not None

    @property
    def prefiltered(self) -> bool:
        """Whether blocks are prefiltered (False: every line goes to Python)."""
        return self._prefilter is not None

    @property
    def engine(self) -> Engine:
        """What finds the candidate lines of a long stretch of plain ASCII lines."""
        if self._prefilter is not None and self._hyperscan_ready():
            return "hyperscan"
        return "re2" if self._prefilter is not None else "python"

    @property
    def timeouts(self) -> int:
        """Lines whose Python-only check ran out of time (see ``guard.util.saferegex``)."""
        return self._rules.timeouts

    def first(self, text: str, among: Iterable[int] | None = None) -> int | None:
        """The index of the first rule that matches ``text``, with Python's semantics; ``among``
        (ascending) limits the rules asked to those a prefilter saw match."""
        return self._rules.first(text, among)

    def line(
        self, raw: bytes, among: Iterable[int] | None = None, *, cut: bool = False
    ) -> Match | None:
        """Match one line (its newline, if any, is not part of it)."""
        text = _text(raw)
        index = self.first(text, among)
        return None if index is None else _match(index, text, cut)

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
        if end - pos >= max(self._hs_from, 1) and self._hyperscan_ready():
            ends = self._hyperscan_ends(block, pos, end)
            if ends is not None:
                yield from self._lines_ending(block, pos, end, ends, limit)
                return
        yield from self._re2_candidates(block, pos, end, limit)

    def _hyperscan_ends(self, block: bytes, pos: int, end: int) -> list[tuple[int, int]] | None:
        """``(end offset in block, rule)`` of every match in ``block[pos:end]``, in order of
        end; None: a storm (more than ``HS_STORM`` matches)."""
        ends: list[tuple[int, int]] = []

        def on_match(rule: int, _start: int, stop: int, _flags: int, _ctx: Any) -> bool:
            ends.append((pos + stop, rule))
            return len(ends) > HS_STORM  # True stops the scan

        try:
            self._hyperscan.scan(
                memoryview(block)[pos:end], match_event_handler=on_match, scratch=self._scratch
            )
        except hyperscan.ScanTerminated:
            return None
        ends.sort()
        return ends

    def _lines_ending(
        self, block: bytes, pos: int, end: int, ends: list[tuple[int, int]], limit: int
    ) -> Iterator[Match]:
        """Match, once each, the lines in which a prefilter match ends, asking only the rules
        that matched there (a rule Python matches in a line ends a match in that line). The
        stretch is plain (``_safe``), so RE2 gives Python's answer with no text to check."""
        first, rfind, find = self._rules.first_plain, block.rfind, block.find
        k, n = 0, len(ends)
        while k < n:
            last, rule = ends[k]
            last -= 1  # the match's last byte (no empty matches here)
            i = rfind(b"\n", pos, last)
            start = pos if i < 0 else i + 1
            j = find(b"\n", last, end)
            stop = end if j < 0 else j + 1
            k += 1
            among: Iterable[int] = (rule,)  # mostly one match a line
            if k < n and ends[k][0] <= stop:
                rules = {rule}
                while k < n and ends[k][0] <= stop:
                    rules.add(ends[k][1])
                    k += 1
                among = sorted(rules)
            raw = block[start : min(stop, start + limit)].rstrip(b"\n")
            index = first(raw, among)  # a stretch of plain lines: RE2 answers
            if index is not None:
                yield _match(index, raw.decode("ascii"), stop - start > limit + 1, start, stop)

    def _re2_candidates(self, block: bytes, pos: int, end: int, limit: int) -> Iterator[Match]:
        search = self._prefilter.search
        while pos < end:
            hit = search(block, pos, end)
            if hit is None or hit.start() >= end:  # nothing, or an empty match after the last line
                return
            i = block.rfind(b"\n", pos, hit.start())
            start = pos if i < 0 else i + 1
            j = block.find(b"\n", hit.start(), end)
            pos = end if j < 0 else j + 1
            if (
                found := self.line(
                    block[start : min(pos, start + limit)], cut=pos - start > limit + 1
                )
            ) is not None:
                found.start, found.stop = start, pos
                yield found

    def _each_line(self, block: bytes, pos: int, end: int, limit: int) -> Iterator[Match]:
        """Ask the rule set about every line of ``block[pos:end]``, in one batch."""
        texts, cuts, spans = [], [], []
        while pos < end:
            j = block.find(b"\n", pos, end)
            stop = end if j < 0 else j + 1
            texts.append(_text(block[pos : min(stop, pos + limit)]))
            cuts.append(stop - pos > limit + 1)
            spans.append((pos, stop))
            pos = stop
        answers = self._rules.first_many([(t, None) for t in texts])
        for text, cut, span, index in zip(texts, cuts, spans, answers, strict=True):
            if index is not None:
                yield _match(index, text, cut, *span)


def _text(raw: bytes) -> str:
    return raw.rstrip(b"\r\n").decode("utf-8", "replace").replace("\x00", "\ufffd")
