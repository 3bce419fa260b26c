"""Match user rules against hostile text at a bounded cost, never holding the event loop.

A rule is a Python regex (``pattern``, ``ignore_case``). Python's ``re`` backtracks: ``.*X.*Y``
costs the cube of a line's length, ``(a+)+$`` doubles with every character, and it holds the GIL
while it runs, so one hostile log line would stall every thread, the event loop included. Here
each rule is answered by the cheapest engine whose answer is *exactly* Python's:

- **RE2** (linear time) decides a rule on a line when the two cannot disagree: the rule compiles
  in RE2 with the same meaning (no backreference, lookaround, ``\\A``/``\\Z``, ``{,n}``, POSIX
  class...), and either the line is printable ASCII and tabs, or the rule is *neutral*: no
  ``\\d \\w \\s \\b`` (Unicode classes in Python, ASCII in RE2) and no ignore-case (Python folds a
  few characters RE2 does not). That covers nearly every rule and line.
- **Python** answers the rest, in a separate worker process under a time budget
  (``PER_LINE`` seconds a line, ``PER_BATCH`` a batch). A line over budget is abandoned: the
  worker is killed (and restarted on the next request), and the line gets RE2's answer where
  the rule compiles there, else no match; ``RuleSet.timeouts`` counts such lines.

The worker is one small process shared by every rule set (started on first need, a plain
``python -c`` so it imports nothing of Guard's); requests carry their rules, which it caches.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import re
import select
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from typing import Any

import re2
from loguru import logger

PER_LINE = 0.25  # seconds of Python regex work one line may cost before it is abandoned
PER_BATCH = 2.0  # seconds a whole batch may cost; the rest of it gets the fallback answer

RE2_OPTIONS = re2.Options()
RE2_OPTIONS.max_mem = 64 << 20
RE2_OPTIONS.log_errors = False
_DECIDE = re2.Options()  # for yes/no answers: no submatches, so RE2 can use its DFA
_DECIDE.max_mem = 8 << 20
_DECIDE.log_errors = False
_DECIDE.never_capture = True
# Textual marks of constructs RE2 reads differently from Python (checked before compiling).
DIVERGENT = re.compile(r"\\[AZz]|\{,|\[:")
# Constructs whose meaning depends on Unicode tables that RE2 and Python do not share.
_UNICODE_SENSITIVE = re.compile(r"\\[dDwWsSbB]|\(\?[a-zA-Z]*i")
_UNSAFE_TEXT = re.compile(r"[^\t\x20-\x7e]")

_UNANCHORED = re2._Anchor.UNANCHORED
Rule = tuple[str, bool]  # (pattern, ignore_case)
_TIMEOUT = -2  # a worker answer: the line ran out of time


def re2_source(pattern: str, ignore_case: bool) -> str | None:
    """The rule as an RE2 group with Python's meaning, or None if RE2 must not be trusted."""
    if DIVERGENT.search(pattern):
        return None
    source = f"(?i:{pattern})" if ignore_case else f"(?:{pattern})"
    try:
        re2.compile(source, RE2_OPTIONS)
    except re2.error:
        return None
    return source


def _hit(rx: Any, data: bytes) -> bool:
    """Whether compiled RE2 ``rx`` matches somewhere in UTF-8 ``data`` (the binding's low-level
    call: its ``search`` maps every offset back to characters, several times slower)."""
    return bool(rx._regexp.Match(_UNANCHORED, data, 0, len(data))[0] != (-1, -1))


def plain_text(text: str) -> bool:
    """Whether ``text`` is printable ASCII and tabs (where RE2 and Python always agree)."""
    return _UNSAFE_TEXT.search(text) is None


class RuleSet:
    """Ordered rules; ``first`` is the index of the first rule that matches a text, with
    Python's semantics, at a bounded cost."""

    def __init__(
        self, rules: Sequence[Rule], *, per_line: float = PER_LINE, per_batch: float = PER_BATCH
    ) -> None:
        for pattern, ignore_case in rules:  # a bad pattern fails here, as ``re`` would
            re.compile(pattern, re.IGNORECASE if ignore_case else 0)
        self.rules = list(rules)
        sources = [re2_source(p, ic) for p, ic in rules]
        self._re2: list[Any] = [None if s is None else re2.compile(s, _DECIDE) for s in sources]
        self._neutral = [
            s is not None and not ic and not _UNICODE_SENSITIVE.search(p)
            for s, (p, ic) in zip(sources, rules, strict=True)
        ]
        self.per_line, self.per_batch = per_line, per_batch
        self.timeouts = 0  # lines whose Python check was abandoned

    @property
    def linear(self) -> bool:
        """Whether every rule compiles in RE2 (then only odd text ever reaches Python)."""
        return all(r is not None for r in self._re2)

    def first(self, text: str, among: Iterable[int] | None = None) -> int | None:
        return self.first_many([(text, None if among is None else list(among))])[0]

    def first_plain(self, data: bytes, among: Iterable[int]) -> int | None:
        """``first`` for a line of printable ASCII and tabs (``data``, no newline), where RE2
        answers every rule that compiles there exactly as Python would: no text to encode or
        check, no batch to build (the matched lines of a big scan)."""
        for i in among:
            rx = self._re2[i]
            if rx is None:
                return self.first(data.decode(), among)
            if _hit(rx, data):
                return i
        return None

    def first_many(self, items: Sequence[tuple[str, list[int] | None]]) -> list[int | None]:
        """``first`` for many texts at once (one worker request for those that need one)."""
        answers: list[int | None] = []
        asks: list[tuple[int, str, list[int]]] = []  # (item, text, rules Python must try)
        for n, (text, among) in enumerate(items):
            try:
                data = text.encode()
            except UnicodeEncodeError:  # a lone surrogate: only Python reads it as Python does
                data = None
            plain = data is not None and plain_text(text)
            answer, python = None, []
            for i in range(len(self.rules)) if among is None else among:
                rx = self._re2[i]
                if rx is not None and data is not None and (plain or self._neutral[i]):
                    if _hit(rx, data):
                        answer = i
                        break
                else:
                    python.append(i)
            answers.append(answer)
            if python:
                asks.append((n, text, python))
        if asks:
            found = _WORKER.first(
                self.rules, [(t, rules) for _, t, rules in asks], self.per_line, self.per_batch
            )
            for (n, text, rules), got in zip(asks, found, strict=True):
                if got == _TIMEOUT:
                    self.timeouts += 1
                    got = self._fallback(text, rules)
                if got is not None and (answers[n] is None or got < answers[n]):  # type: ignore[operator]
                    answers[n] = got
        return answers

    def _fallback(self, text: str, rules: list[int]) -> int | None:
        """RE2's answer for a line Python ran out of time on (no match where RE2 cannot)."""
        data = text.encode("utf-8", "surrogatepass")
        for i in rules:
            rx = self._re2[i]
            if rx is not None and _hit(rx, data):
                return i
        return None


# -- the Python worker -----------------------------------------------------------------------

_CHILD = r"""
import pickle, re, struct, sys
cache = {}
read, write = sys.stdin.buffer, sys.stdout.buffer
while True:
    head = read.read(4)
    if len(head) < 4:
        break
    rules, items = pickle.loads(read.read(struct.unpack(">I", head)[0]))
    compiled = []
    for pattern, ic in rules:
        key = (pattern, ic)
        if key not in cache:
            cache[key] = re.compile(pattern, re.IGNORECASE if ic else 0)
        compiled.append(cache[key])
    for text, among in items:
        found = -1
        for i in among:
            if compiled[i].search(text):
                found = i
                break
        write.write(b"%d\n" % found)
        write.flush()
"""


class _Worker:
    """One ``python -c`` process answering Python-only questions, killed when it overruns."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._buffer = b""

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _CHILD],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                close_fds=True,
            )
            self._buffer = b""
        return self._proc

    def _kill(self) -> None:
        if self._proc is not None:
            with contextlib.suppress(OSError):
                self._proc.kill()
            with contextlib.suppress(Exception):
                self._proc.wait(timeout=5)
            for stream in (self._proc.stdin, self._proc.stdout):
                with contextlib.suppress(Exception):
                    stream.close()  # type: ignore[union-attr]
        self._proc, self._buffer = None, b""

    def close(self) -> None:
        with self._lock:
            self._kill()

    def first(
        self,
        rules: list[Rule],
        items: list[tuple[str, list[int]]],
        per_line: float,
        per_batch: float,
    ) -> list[int | None]:
        """Each item's first matching rule among its rules (``_TIMEOUT`` where abandoned)."""
        out: list[int | None] = []
        with self._lock:
            deadline = time.monotonic() + per_batch
            while len(out) < len(items):
                if time.monotonic() >= deadline:  # the batch's budget is spent
                    out += [_TIMEOUT] * (len(items) - len(out))
                    break
                out += self._run(rules, items[len(out) :], per_line, deadline)
        return out

    def _run(
        self,
        rules: list[Rule],
        items: list[tuple[str, list[int]]],
        per_line: float,
        deadline: float,
    ) -> list[int | None]:
        """Answers for a prefix of ``items``: all of them, or up to the first that overran
        (answered ``_TIMEOUT``; the worker is killed and the caller sends the rest again)."""
        try:
            proc = self._start()
            payload = pickle.dumps((rules, items), protocol=pickle.HIGHEST_PROTOCOL)
            assert proc.stdin is not None
            proc.stdin.write(struct.pack(">I", len(payload)) + payload)
            proc.stdin.flush()
        except (OSError, ValueError) as exc:
            logger.warning("regex worker unavailable ({}); Python-only rules get RE2's answer", exc)
            self._kill()
            return [_TIMEOUT] * len(items)
        answers: list[int | None] = []
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        while len(answers) < len(items):
            line_deadline = min(time.monotonic() + per_line, deadline)
            while b"\n" not in self._buffer:
                left = line_deadline - time.monotonic()
                ready = left > 0 and select.select([fd], [], [], left)[0]
                chunk = os.read(fd, 65536) if ready else b""
                if not chunk:  # out of time, or the worker died
                    self._kill()
                    return [*answers, _TIMEOUT]
                self._buffer += chunk
            line, self._buffer = self._buffer.split(b"\n", 1)
            value = int(line)
            answers.append(None if value < 0 else value)
        return answers


_WORKER = _Worker()
atexit.register(_WORKER.close)
