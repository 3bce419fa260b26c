"""Run hundreds of redaction rules over a text in time linear in its length.

Python's ``re`` backtracks: a rule with an open-ended repeat before a required literal costs the
square of a hostile line's length (``eyJ-`` repeated 16 K times took half a second). Here every
rule is an RE2 regex (a DFA, no backtracking: the same engine the log scan uses), so a search
costs the length of the text whatever it holds. Every repeat followed by more of the pattern is
bounded (``bound_repeats``); only a trailing one may be open-ended, where RE2 runs it as one
state (a large bounded count there costs RE2 far more on a hostile line). Each rule sees at most
``WINDOW`` bytes at a time (a longer text is cut at line ends, or hard where a line is longer),
and acts on at most ``MAX_CHECKED`` matches per window: past that, the rest of the window is
replaced whole (fail closed), so a line of ten thousand decoys costs no more than a few hundred.

The text is encoded once; one ``re2.Set`` pass over it finds which of the rules' keywords occur
(case-insensitively), and only the rules with a keyword present, plus the few without keywords,
run, in order. A rule replaces its secret group with ``[REDACTED:<kind>]`` unless its ``check``
(entropy, an empty word, a placeholder) says the value is no secret, or ``allowed`` keeps it;
the next search starts where the secret ended, so the ``&`` that ended one ``password=`` value
in a query can begin the next parameter's.

Tested by ``tests/security/test_redact_bounded.py``.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import re2

Check = Callable[[str], bool]
FIRST_GROUP = -1  # a rule's secret is its first group that took part in the match
WINDOW = 64 * 1024  # the most bytes of text one rule sees at a time (a log line's limit)
MAX_CHECKED = 256  # matches of one rule checked per window; the rest of it is then replaced

_OPTIONS = re2.Options()
_OPTIONS.max_mem = 32 << 20
_OPTIONS.log_errors = False
_KEYWORDS = re2.Options()
_KEYWORDS.case_sensitive = False
_KEYWORDS.log_errors = False
_KEYWORDS.never_capture = True
_UNANCHORED = re2._Anchor.UNANCHORED
_NULL = (-1, -1)


@dataclass(frozen=True)
class Rule:
    kind: str  # the placeholder's name: lower-case letters and dashes
    pattern: str  # RE2 syntax, every repeat bounded
    group: int = 0  # the part of the match that is the secret
    needs: tuple[str, ...] = ()  # keywords (any case), one of which the text must hold
    check: Check | None = None  # a last test of the secret (e.g. its entropy)
    min_length: int = 0  # skip texts shorter than this (in UTF-8 bytes)
    rewrite: Callable[[str], str | None] | None = None  # the secret group's new text, or None
    source: str = "guard"  # where the rule comes from ("guard", "gitleaks:<id>", "config")


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values()) if n else 0.0


def marker(name: str) -> str:
    """The text that replaces the secret called (or of kind) ``name``."""
    return f"[REDACTED:{name}]"


def compile_rule(rule: Rule) -> Any:
    """The rule's RE2 program; ``re2.error`` names what RE2 cannot read."""
    return _compile(rule.pattern)


@functools.lru_cache(maxsize=4096)
def _compile(pattern: str) -> Any:
    return re2.compile(pattern, _OPTIONS)


class Engine:
    """Ordered rules compiled for one keyword pass and RE2 searches."""

    def __init__(self, rules: Sequence[Rule], allowed: Callable[[str], bool] | None = None):
        self.rules = list(rules)
        self._allowed = allowed
        self._programs: list[Any] = [None] * len(self.rules)  # compiled when first needed
        self._markers = [marker(r.kind).encode() for r in self.rules]
        words: dict[str, int] = {}
        self._by_word: list[list[int]] = []
        self._always: list[int] = []
        for i, rule in enumerate(self.rules):
            if not rule.needs:
                self._always.append(i)
            for word in rule.needs:
                w = words.setdefault(word.lower(), len(words))
                if w == len(self._by_word):
                    self._by_word.append([])
                self._by_word[w].append(i)
        self._set: Any = None
        if words:
            self._set = re2.Set.SearchSet(_KEYWORDS)
            for word in words:
                self._set.Add(re2.escape(word))
            self._set.Compile()

    def candidates(self, data: bytes) -> list[int]:
        """The rules worth running on ``data``: a keyword of theirs occurs, or they have none."""
        found = self._set.Match(data) if self._set is not None else None
        if not found:
            return self._always
        chosen = set(self._always)
        for w in found:
            chosen.update(self._by_word[w])
        return sorted(chosen)

    def redact(self, text: str) -> str:
        """``text`` with each rule's secrets replaced by its placeholder."""
        data = text.encode("utf-8", "surrogatepass")
        if len(data) > WINDOW:
            parts = [self._window(w) for w in _windows(data)]
            new = b"".join(
                d if d is not None else w for d, w in zip(parts, _windows(data), strict=True)
            )
            return new.decode("utf-8", "surrogatepass") if any(parts) else text
        done = self._window(data)
        return text if done is None else done.decode("utf-8", "surrogatepass")

    def _window(self, data: bytes) -> bytes | None:
        """``data`` redacted (None: unchanged)."""
        changed = False
        for i in self.candidates(data):
            if len(data) >= self.rules[i].min_length:
                new = self._apply(i, data)
                if new is not None:
                    data, changed = new, True
        return data if changed else None

    def _apply(self, i: int, data: bytes) -> bytes | None:
        rule, program, mark = self.rules[i], self._programs[i], self._markers[i]
        if program is None:  # most rules never meet their keyword: start-up stays cheap
            program = self._programs[i] = compile_rule(rule)._regexp
        out: list[bytes] = []
        pos = last = checked = 0
        end = len(data)
        while pos <= end:
            spans = program.Match(_UNANCHORED, data, pos, end)
            whole = spans[0]
            if whole == _NULL:
                break
            checked += 1
            if checked > MAX_CHECKED:  # a storm of matches: replace the rest, check no more
                out += (data[last : whole[0]], mark)
                last = end
                break
            start, stop = _secret_span(spans, rule.group)
            pos = whole[1] if whole[1] > whole[0] else whole[1] + 1
            if start >= 0 and stop > start:
                new = self._replacement(rule, data[start:stop], mark)
                if new is not None:
                    out += (data[last:start], new)
                    last = pos = stop  # what ended the match may begin the next one
        if not out:
            return None
        out.append(data[last:])
        return b"".join(out)

    def _replacement(self, rule: Rule, raw: bytes, mark: bytes) -> bytes | None:
        """What replaces the secret ``raw`` (None: it is no secret, leave it)."""
        value = raw.decode("utf-8", "surrogatepass")
        if rule.rewrite is not None:
            new = rule.rewrite(value)
            return None if new is None else new.encode("utf-8", "surrogatepass")
        if rule.check is not None and not rule.check(value):
            return None
        if self._allowed is not None and self._allowed(value):
            return None
        return mark


def _windows(data: bytes) -> list[bytes]:
    """``data`` in pieces of at most ``WINDOW`` bytes, cut after a newline where there is one."""
    out, pos = [], 0
    while pos < len(data):
        stop = pos + WINDOW
        if stop < len(data):
            cut = data.rfind(b"\n", pos, stop)
            stop = cut + 1 if cut >= pos else stop
        out.append(data[pos:stop])
        pos = stop
    return out


def _secret_span(spans: list[tuple[int, int]], group: int) -> tuple[int, int]:
    if group != FIRST_GROUP:
        return spans[group]
    for span in spans[1:]:
        if span[0] >= 0 and span[1] > span[0]:
            return span
    return spans[0]


_QUANTIFIER = re.compile(r"\{(\d+),\}")


def bound_repeats(pattern: str, cap: int) -> str:
    """``pattern`` with each open-ended repeat (``*``, ``+``, ``{n,}``) capped at ``cap``, but a
    trailing one (nothing of the pattern after it but closing parentheses)."""
    out: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
            out.append(c)
            i += 1
            continue
        if c == "[":
            j = i + 1
            if j < n and pattern[j] == "^":
                j += 1
            if j < n and pattern[j] == "]":  # a leading ] is a literal
                j += 1
            if pattern.startswith("[:", i):  # [[:alpha:]] is inside a class already handled
                j = i + 1
            out.append(pattern[i:j])
            i, in_class = j, True
            continue
        if c in "*+" and out and out[-1] not in ("(", "|"):
            trailing = _trailing(pattern, i + 1)
            out.append(c if trailing else f"{{0,{cap}}}" if c == "*" else f"{{1,{cap}}}")
            i += 1
            continue
        m = _QUANTIFIER.match(pattern, i) if c == "{" else None
        if m is not None:
            trailing = _trailing(pattern, m.end())
            out.append(m.group(0) if trailing else f"{{{m.group(1)},{max(cap, int(m.group(1)))}}}")
            i = m.end()
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _trailing(pattern: str, at: int) -> bool:
    """Whether only closing parentheses (and a laziness mark) follow position ``at`` (in
    ``a+|b`` and ``(?:a+|b)c`` more follows ``a+``)."""
    return pattern[at:].lstrip("?").strip(")") == ""
