"""Learn a log source's header from its first lines (``format: auto``).

A header is the run of leading fields whose *shape* stays the same from line to line while the
message after it varies: timestamps and dates of any common shape, levels, numbers (pids,
sequence ids), ``-`` placeholders, bracketed fields (``[main]``, ``[10.30 16:49:06]``),
names (hosts, programs) and a ``component:`` that ends it. ``learn_header`` reads up to
``SAMPLE`` lines (one of each masked form, so a repeated event does not look like a column),
splits each into leading fields (white space or ``|`` between them) and keeps a column while at
least ``SHARE`` of the lines agree on its shape:

- a column of timestamps, numbers, levels, month or day names, ``-`` or brackets is a header
  field;
- a column of names (``node-246``, ``combo``, ``chrome.exe``) is one only if such a field
  follows within ``NAMES`` columns (and, when the line starts with names, the header holds two
  such fields or ends with one of the two below): names alone are as likely to be the
  message's first words;
- a ``component:`` column (a name ending in a colon) is the last field, and so is a ``-``
  after other fields (``chrome.exe - message``; a name or two more may come before it);
- a field present on some lines only (Proxifier's ``*64``) is optional when, without it, the
  next field still lines up;
- quoted text is always message.

The result is one compiled pattern with a ``message`` group: after learning, a line costs one
``match``. ``None`` means nothing was learned (the caller keeps its other ways).
"""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence

from guard.domain.fingerprint import mask

SAMPLE = 200  # lines a header is learned from
KEPT = 4  # learned headers tried on a line (a source may hold lines of a few writers)
WINDOW = 64  # recent lines: when half of them stop fitting the header, it is learned again
CHARS = 300  # of a line, what learning looks at
MIN_LINES = 8  # distinct (masked) lines needed before learning
SHARE = 0.9  # of the lines that fit so far, the share that must agree on a column's shape
COLUMNS = 12  # header fields at most
NAMES = 3  # name columns that may wait for a stronger field after them

_BRACKET = r"\[[^\]\n]*\]|\([^)\n]*\)|<[^>\n]*>"
_TOKEN = r"(?:[^\s|\[(\"]++|\[[^\]\n]*\]|\([^)\n]*\))++"  # possessive: misfits fail fast
_SEP = r"(?:\s*\|\s*|\s+)"
_LEVELS = (
    r"(?i:trace|debug|info|information|notice|warn|warning|error|err|severe|fatal|critical"
    r"|crit|alert|emerg|emergency)"
)
_MONTHS = "Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
_DAYS = "Mon|Tue|Wed|Thu|Fri|Sat|Sun"

# shape name -> (pattern of the whole field, without trailing , or ;); the first that fits wins
SHAPES: dict[str, str] = {
    "dash": r"-",
    "bracket": _BRACKET,
    "level": _LEVELS,
    "month": f"(?:{_MONTHS})",
    "day": f"(?:{_DAYS})",
    "number": r"[+-]?\d++",
    "time": r"\d[\d\-/.:,T_+Z]*+",
    "component": _TOKEN + r"(?<=[^\s:]:)",
    "name": _TOKEN,
}
_STRONG = {"dash", "bracket", "level", "month", "day", "number", "time"}
_ANY = _STRONG | {"name"}  # what a column of names may hold
_SHAPE_RES = {name: re.compile(pattern) for name, pattern in SHAPES.items()}
_FIELD = re.compile(r'"[^"\n]*"|' + _TOKEN)
_GAP = re.compile(_SEP)


def fields(line: str, limit: int = COLUMNS + 2) -> list[str]:
    """The leading fields of ``line`` (at most ``limit``): white space or ``|`` between them,
    a bracketed or quoted run (spaces inside) kept whole."""
    out: list[str] = []
    at = len(line) - len(line.lstrip())
    while len(out) < limit:
        found = _FIELD.match(line, at)
        if found is None:
            break
        out.append(found.group())
        gap = _GAP.match(line, found.end())
        if gap is None:
            break
        at = gap.end()
    return out


def shape(field: str) -> str:
    """The shape of one field: a key of ``SHAPES``, or ``"quoted"`` / ``"other"``."""
    if field.startswith('"'):
        return "quoted"
    bare = field[:-1] if len(field) > 1 and field[-1] in ",;" else field
    for name, pattern in _SHAPE_RES.items():
        if pattern.fullmatch(bare):
            return name
    return "other"


def distinct_lines(lines: Sequence[str]) -> list[str]:
    """One line per masked shape among the first ``SAMPLE`` (the last of each, in order of
    each shape's first line): what ``learn_header`` learns from."""
    return list({mask(line): line for line in lines[:SAMPLE] if line.strip()}.values())


def learn_header(
    lines: Sequence[str], distinct: Sequence[str] | None = None
) -> re.Pattern[str] | None:
    """A pattern taking off the header the lines share (``None``: no header learned);
    ``distinct``: ``distinct_lines(lines)``, when the caller kept it as the lines came."""
    if distinct is None:
        distinct = distinct_lines(lines)
    if len(distinct) < MIN_LINES:
        return None
    rows = [[shape(f) for f in fields(line)] for line in distinct]
    alive = [(row, 0) for row in rows]  # (shapes, where the next column starts)
    columns: list[str] = []  # the header's fields, as patterns
    names: list[str] = []  # name columns waiting for a stronger field
    loose, strong, ends = False, 0, False  # it starts with names; strong fields; how it ends
    while len(columns) + len(names) < COLUMNS:
        step = _column(alive)
        if step is None:
            break
        pattern, kept, kind = step
        alive = kept
        if kind == "name":
            if len(names) == NAMES:
                break
            names.append(pattern)
            continue
        ends = kind == "component" or (kind == "dash" and bool(columns or names))
        if names and not columns and not ends:  # it starts with names ("GET /cart 200 ..."):
            loose = True  # a header only if a second strong field comes
        strong += kind in _STRONG
        if ends and kind == "dash":  # "prog - message": a name or two more may come before it
            pattern = f"(?:{_TOKEN}[,;]?{_SEP}){{0,2}}?" + pattern
        columns += [*names, pattern]
        names = []
        if ends:  # "component:" and "... - " end a header
            break
    if not columns or (loose and strong < 2 and not ends):
        return None
    return re.compile("^" + "".join(columns) + r"(?P<message>.*)$", re.DOTALL)


def _piece(kind: str) -> str:
    return f"(?:{SHAPES[kind]})[,;]?(?:{_SEP}|$)"


def _column(
    alive: list[tuple[list[str], int]],
) -> tuple[str, list[tuple[list[str], int]], str] | None:
    """The next column: its pattern, the lines that fit it, its kind; None: the header ends."""
    here = Counter(row[at] if at < len(row) else None for row, at in alive)
    top, count = here.most_common(1)[0]
    need = SHARE * len(alive)
    if top in _STRONG | {"name", "component"} and count >= need:
        kept = [(row, at + 1) for row, at in alive if at < len(row) and row[at] == top]
        return _piece(str(top)), kept, str(top)
    # a field on some lines only: lines without it have the next field here already
    for kind, _ in here.most_common(3):
        if kind not in _STRONG | {"component"}:
            continue
        fit = []
        for row, at in alive:
            if at < len(row) and row[at] == kind:
                fit.append((row, at + 1))
            elif at + 1 < len(row) and row[at + 1] == kind and row[at] in _ANY:
                fit.append((row, at + 2))
        if len(fit) >= need:
            return f"(?:{_TOKEN}[,;]?{_SEP})??" + _piece(str(kind)), fit, str(kind)
    # fields of mixed shapes (a host or a number, a category or "-"): a name column
    fit = [(row, at + 1) for row, at in alive if at < len(row) and row[at] in _ANY]
    if len(fit) >= need:
        return _piece("name"), fit, "name"
    return None


class HeaderLearner:
    """One source's learned headers: the first learned from its first lines; another from the
    lines no format recognised once they make half of the last ``WINDOW`` (a header changed, or
    a second writer with its own). The ``KEPT`` most recent are tried, newest first; an attempt
    that learns nothing waits twice as long before the next. ``generation`` counts changes."""

    def __init__(self, fits: Callable[[str], str | None] = lambda line: None) -> None:
        self.patterns: list[re.Pattern[str]] = []
        self.generation = 0
        self._fits_otherwise = fits  # the message another format leaves of a line it knows
        self._sample: list[str] = []  # emptied once learned from: it is a monitor's to keep
        # the sample's ``distinct_lines``, kept as it grows: each line masked once, not at
        # every attempt (200 log files' learning was a fifth of a quiet Guard's CPU)
        self._distinct: dict[str, str] = {}
        self._sampled = 0
        self._tried = 0  # sample size at the last attempt
        self._recent: deque[bool] = deque(maxlen=WINDOW)
        self._misfits: deque[str] = deque(maxlen=WINDOW)
        self._patience = WINDOW  # lines between two attempts to learn again
        self._wait = 0

    @property
    def learning(self) -> bool:
        """Still sampling the source's first lines."""
        return self._sampled < SAMPLE

    def feed(self, lines: Iterable[str]) -> None:
        """Sample more of the source's first lines (no-op once ``SAMPLE`` were seen)."""
        if not self.learning:
            return
        for line in lines:
            if len(self._sample) >= SAMPLE:
                break
            if line.strip():
                self._sample.append(line[:CHARS])
                self._distinct[mask(line[:CHARS])] = line[:CHARS]
        self._sampled = len(self._sample)
        # learn at 8, 16, 32, ... lines and at SAMPLE: cheap while lines come one by one
        if len(self._sample) >= max(MIN_LINES, 2 * self._tried) or not self.learning:
            self._tried = len(self._sample)
            self._settle(self._sample, first=True, distinct=list(self._distinct.values()))
        if not self.learning:
            self._sample, self._distinct = [], {}  # learned from for good: not kept

    def header(self, line: str) -> re.Match[str] | None:
        """The learned header's match on ``line`` (None: none learned, or it does not fit)."""
        if self.learning:
            self.feed((line,))
        for pattern in self.patterns:
            found = pattern.match(line)
            if found is not None:
                self.seen(line, True)
                return found
        return None

    def seen(self, line: str, recognised: bool) -> None:
        """Whether some format recognised ``line``; lines none did may hold a new header."""
        if self.learning:
            return
        self._recent.append(recognised)
        self._wait -= 1
        if not recognised:
            self._misfits.append(line[:CHARS])
            half = self._recent.count(False) * 2 >= WINDOW
            if self._wait <= 0 and len(self._recent) == WINDOW and half:
                before = self.generation
                self._settle(list(self._misfits), first=False)
                self._recent.clear()
                self._patience = WINDOW if self.generation != before else self._patience * 2
                self._wait = min(self._patience, 64 * WINDOW)

    def _settle(
        self, sample: Sequence[str], *, first: bool, distinct: Sequence[str] | None = None
    ) -> None:
        learned = learn_header(sample, distinct)
        if learned is not None and not self._deeper(learned, sample):
            learned = None
        if first:  # from the first lines: the best guess so far replaces the last
            guess = [] if learned is None else [learned]
            if guess != self.patterns:
                self.patterns = guess
                self.generation += 1
        elif learned is not None and learned not in self.patterns:
            self.patterns = [learned, *self.patterns][:KEPT]
            self.generation += 1

    def _deeper(self, learned: re.Pattern[str], sample: Sequence[str]) -> bool:
        """Whether ``learned`` is worth trying before the other formats: they do not know
        ``SHARE`` of the lines, or it takes more off them. A preset can fit only the start of
        a header (``iso`` takes the time off ``2026-12-06 10:00:01.123 -03 [4321] ERROR: ...``
        and leaves the rest in every message): that must not stop learning."""
        known = deeper = 0
        for line in sample:
            other = self._fits_otherwise(line)
            if other is None:
                continue
            known += 1
            found = learned.match(line)
            deeper += found is not None and len(found.group("message")) < len(other)
        return known < SHARE * len(sample) or deeper >= SHARE * known
