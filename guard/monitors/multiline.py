"""Join the lines of one multi-line event (a stack trace, a panic) so that it is one signal.

A log monitor matches whole lines fast (``LineMatcher``); most matched lines are events on
their own, so ``Framer.frame`` first asks, per matched line, two cheap questions: could this
line continue the one before, and could the next line continue it? Only when one answer is
yes is the event parsed: back to a line that cannot be a continuation (a sure start), then
forward through the continuation shapes of the preset, which may depend on what the event
holds so far (a Python exception line ends a traceback; a Go function line follows a goroutine
header). Every line is walked back and forward at most once per block.

The event then counts once: its rule is the first rule (in order) that matches any of its
lines; its summary (the exception line of a Python traceback, a Java trace's first line and
each ``Caused by:``, otherwise its first line) is what the message and the template come from;
the whole block, redacted and capped at ``max_lines`` / ``max_bytes``, is its evidence.

The caller carries the last event of each block into the next (it may go on), bounded by
``max_bytes``: a longer event is emitted and its remaining continuation lines are absorbed
(``absorb``), so even an endless trace stays one event in bounded memory.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from guard.monitors.matcher import Match
from guard.playbooks.models import MultilineSpec
from guard.redact import redact
from guard.util.saferegex import RuleSet

SHAPES: dict[str, frozenset[str]] = {
    "python": frozenset({"indent", "traceback", "chain", "pyexc"}),
    "java": frozenset({"indent", "caused", "more"}),
    "go": frozenset({"indent", "goroutine", "signal", "gofunc"}),
    "node": frozenset({"indent"}),
    "none": frozenset(),
}
SHAPES["auto"] = frozenset().union(*SHAPES.values())
TAIL_LINES = 10  # the last lines of a capped event, kept after the first ones
SETTLE = 0.2  # seconds a lone line that heads nothing waits for a continuation
CAUSES = 5  # Java ``Caused by:`` lines that join a summary

# A line that could continue another in some preset (a superset, checked first and fast).
_MAYBE = re.compile(
    rb"[ \t]|\r?\n|Caused by:|Suppressed:|Traceback \(most recent call last\):"
    rb"|During handling of the above exception|The above exception was the direct cause"
    rb"|goroutine \d+ \[|\[signal |\.\.\. ?\d+ more|created by "
)
_MAYBE_FIRST = frozenset(b" \t\r\nCSTDg[.c")  # the bytes ``_MAYBE`` can start with

# A lone line that may head a multi-line event (an exception, a panic, a header ending in ':').
_HEAD = re.compile(
    rb"Traceback|Exception|Error|Throwable|panic|fatal|goroutine|Caused by|:[ \t]*$",
)
_GOROUTINE = re.compile(rb"goroutine \d+ \[[^\]]*\]:")
_MORE = re.compile(rb"\.\.\. ?\d+ more")
_TRACEBACK = b"Traceback (most recent call last):"
_CHAIN = (b"During handling of the above exception", b"The above exception was the direct cause")


@dataclass
class Context:
    """What the event read so far holds, as far as its continuation shapes care."""

    traceback: bool = False  # a Python traceback began
    exc: bool = False  # ...and its exception line came
    chain: bool = False  # a chained-exception line waits for its traceback
    go: bool = False  # a goroutine header came

    def as_state(self) -> dict[str, bool]:
        return asdict(self)


@dataclass
class Event:
    """One multi-line event that some rule matched."""

    start: int
    stop: int
    index: int  # the first rule matching any of its lines
    line: str  # the line that rule matched
    cut: bool  # that line was longer than the match limit
    summary: str
    evidence: str
    lines: int
    context: Context = field(default_factory=Context)


def _bare(line: bytes) -> bytes:
    return line.rstrip(b"\r\n")


def _text(line: bytes) -> str:
    return _bare(line).decode("utf-8", "replace").replace("\x00", "\ufffd")


def _eol(block: bytes, pos: int, end: int) -> int:
    j = block.find(b"\n", pos, end)
    return end if j < 0 else j + 1


def _indented(line: bytes) -> bool:
    return line[:1] in (b" ", b"\t")


class Framer:
    """The multi-line settings of one monitor, applied to blocks of whole lines."""

    def __init__(self, spec: MultilineSpec) -> None:
        self.spec = spec
        self.max_lines = spec.max_lines
        self.max_bytes = spec.max_bytes
        self.flush_after = spec.flush_after
        self._start = RuleSet([(spec.start, False)]) if spec.start is not None else None
        self._cont = RuleSet([(spec.continue_, False)]) if spec.continue_ is not None else None
        self._shapes = SHAPES[spec.preset]
        self.enabled = bool(self._shapes) or self._start is not None or self._cont is not None

    # -- cheap questions ------------------------------------------------------------------------

    def _custom(self, line: bytes) -> bool:
        """A continuation by the user's regex (``start``: any line it does not match)."""
        if self._start is not None:
            return self._start.first(_text(line)) is None
        assert self._cont is not None
        return self._cont.first(_text(line)) is not None

    def _maybe(self, block: bytes, pos: int, floor: int) -> bool:
        """Whether the line at ``pos`` could continue the one before (never past ``floor``)."""
        if pos <= floor or pos >= len(block):
            return False
        if self._start is not None or self._cont is not None:
            return self._custom(block[pos : _eol(block, pos, len(block))])
        if block[pos] in _MAYBE_FIRST and _MAYBE.match(block, pos):
            return True
        p = block.rfind(b"\n", floor, pos - 1) + 1 or floor
        return block[p : p + 1] in (b" ", b"\t") or block.startswith(
            (b"goroutine ", b"[signal "), p
        )

    def _back(self, block: bytes, pos: int, floor: int) -> int:
        """The start of the event the line at ``pos`` belongs to (a sure start, or ``floor``)."""
        while self._maybe(block, pos, floor):
            pos = block.rfind(b"\n", floor, pos - 1) + 1 or floor
        return pos

    def tail_start(self, block: bytes, end: int) -> int:
        """Where the last event of ``block[:end]`` (whole lines; it may go on) starts."""
        if end == 0:
            return 0
        last = block.rfind(b"\n", 0, end - 1) + 1
        return self._back(block, last, 0)

    def wait_for(self, block: bytes, start: int) -> float:
        """Seconds the last event of ``block`` (from ``start``; whole lines) waits for more
        lines after its last one: ``flush_after`` for an event of several lines or a line that
        may head one; ``SETTLE`` for a lone line of any other kind (``ERROR payment failed``),
        whose continuation lines would have been written with it, so it is not held ~1 s."""
        if self._start is not None or self._cont is not None:
            return self.flush_after
        if block.count(b"\n", start) > 1 or _HEAD.search(block, start, start + 4096):
            return self.flush_after
        return min(SETTLE, self.flush_after)

    # -- the exact shapes -----------------------------------------------------------------------

    def _head(self, line: bytes, ctx: Context) -> None:
        if "traceback" in self._shapes and line.startswith(_TRACEBACK):
            ctx.traceback = True
        elif "goroutine" in self._shapes and _GOROUTINE.match(line):
            ctx.go = True

    def _continues(self, line: bytes, prev: bytes, nxt: bytes | None, ctx: Context) -> bool:
        """Whether ``line`` continues the event (``nxt``: the line after, None if unknown)."""
        if self._start is not None or self._cont is not None:
            return self._custom(line)
        s = self._shapes
        if not line.strip():
            if nxt is None:
                return False
            chained = "chain" in s and (nxt.startswith(_CHAIN) or prev.startswith(_CHAIN))
            return chained or ("goroutine" in s and _GOROUTINE.match(nxt) is not None)
        if _indented(line):
            return "indent" in s
        if "traceback" in s and line.startswith(_TRACEBACK):
            if not ctx.chain:
                return False  # a traceback starts an event, unless it is a chained one
            ctx.traceback, ctx.exc, ctx.chain = True, False, False
            return True
        if "chain" in s and ctx.traceback and line.startswith(_CHAIN):
            ctx.chain = True
            return True
        if "caused" in s and line.startswith((b"Caused by:", b"Suppressed:")):
            return True
        if "more" in s and _MORE.match(line):
            return True
        if "goroutine" in s and _GOROUTINE.match(line):
            ctx.go = True
            return True
        if "signal" in s and line.startswith(b"[signal "):
            return True
        if "gofunc" in s and ctx.go:
            after_frame = _indented(prev) or _GOROUTINE.match(prev) is not None
            if line.startswith(b"created by ") or (
                after_frame and nxt is not None and nxt.startswith(b"\t")
            ):
                return True
        if "pyexc" in s and ctx.traceback and not ctx.exc and _indented(prev):
            ctx.exc = True
            return True
        return False

    def _event(self, block: bytes, pos: int, end: int) -> Event:
        """Parse the event that starts at ``pos`` (its lines up to ``end``)."""
        stop = _eol(block, pos, end)
        head = _bare(block[pos:stop])
        ctx = Context()
        self._head(head, ctx)
        kept, size, count = [head], len(head), 1
        tail: deque[bytes] = deque(maxlen=TAIL_LINES)
        exc: bytes | None = None
        causes: list[bytes] = []
        prev, p = head, stop
        while p < end:
            s = _eol(block, p, end)
            line = _bare(block[p:s])
            nxt = _bare(block[s : _eol(block, s, end)]) if s < end else None
            had_exc = ctx.exc
            if not self._continues(line, prev, nxt, ctx):
                break
            if ctx.exc and not had_exc:
                exc = line
            if line.startswith(b"Caused by:") and len(causes) < CAUSES:
                causes.append(line)
            count += 1
            if count <= self.max_lines and size + len(line) < self.max_bytes:
                kept.append(line)
                size += len(line) + 1
            else:
                tail.append(line)
            prev, p = line, s
        dropped = count - len(kept) - len(tail)
        body = kept + ([f"... {dropped} more lines ...".encode()] if dropped else []) + list(tail)
        summary = exc if exc is not None else b" | ".join([head, *causes])
        evidence = redact(b"\n".join(body).decode("utf-8", "replace"))[: self.max_bytes]
        return Event(pos, p, -1, "", False, _text(summary), evidence, count, ctx)

    def last_context(self, block: bytes, start: int) -> Context:
        """The context at the end of the block's last event (which begins at or after
        ``start``): what ``absorb`` continues with."""
        end = len(block)
        event = self._event(block, start, end)
        while event.stop < end:
            event = self._event(block, event.stop, end)
        return event.context

    def absorb(self, block: bytes, ctx: Context) -> tuple[int, Context | None]:
        """Skip the leading lines of ``block`` that continue an event already emitted (cut at
        ``max_bytes``); return where the rest starts and the context, None once it ended."""
        end, p, prev = len(block), 0, b"\t"
        while p < end:
            s = _eol(block, p, end)
            line = _bare(block[p:s])
            nxt = _bare(block[s : _eol(block, s, end)]) if s < end else None
            if not self._continues(line, prev, nxt, ctx):
                return p, None
            prev, p = line, s
        return p, ctx

    # -- framing a block ------------------------------------------------------------------------

    def frame(self, block: bytes, matches: Iterable[Match]) -> Iterator[Match | Event]:
        """The block's matched lines as single-line ``Match``es or whole ``Event``s, in order
        (``matches``: ``LineMatcher.scan`` of the same block)."""
        covered, end = 0, len(block)
        current: Event | None = None
        for m in matches:
            if current is not None:
                if m.start < current.stop:
                    if m[0] < current.index:
                        current.index, current.line, current.cut = m[0], m[1], m.cut
                    continue
                yield current
                current = None
            if not self._maybe(block, m.start, covered) and not self._maybe(block, m.stop, m.start):
                covered = m.stop
                yield m
                continue
            start = self._back(block, m.start, covered)
            event = self._event(block, start, end)
            while event.stop <= m.start:  # events before this match's hold no match
                event = self._event(block, event.stop, end)
            event.index, event.line, event.cut = m[0], m[1], m.cut
            current, covered = event, event.stop
        if current is not None:
            yield current


def context_of(state: Any) -> Context | None:
    """The ``Context`` a position stored (None: no event being absorbed)."""
    if not isinstance(state, dict):
        return None
    return Context(**{k: bool(v) for k, v in state.items() if k in Context.__dataclass_fields__})
