"""Rich's ``Table(*headers, box=None)`` as plain text, 20 times faster, for plain cells.

``guard incidents list`` prints 200 rows by default, and Rich lays out and wraps each of its
1,200 cells through several layers of renderables: ~120 ms, a third of the issue-17 budget for
the whole command. When the output has no colours (``Console.color_system`` is None: a pipe, a
file, ``TERM=dumb``) and every cell is printable ASCII (the header and the ``str`` cells also
free of markup and emoji codes), ``render`` makes the same text with Rich's own rules, step by
step: column widths from the widest cell plus padding (``Table._calculate_column_widths``:
``_collapse_widths``, then ``ratio_reduce``, when the table is wider than the console), word
wrapping with ``overflow="ellipsis"`` (``Text.wrap``, ``rich._wrap.divide_line``), left
justified, the header aligned to the bottom of its row and the other cells to the top. For
anything else it returns None and Rich prints. ``tests/cli/test_plaintable.py`` compares the
two on thousands of random tables and console widths.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import pairwise

_ASCII = re.compile(r"[\x20-\x7e]*")
_PLAIN = re.compile(r"[A-Za-z0-9_ .-]*")  # a str cell Rich would not read as markup or emoji
_TIME = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")  # ':MM:' is no emoji code
_WORD = re.compile(r"\s*\S+\s*")
_TRAILING = re.compile(r"\s+$")
PAD = 2  # Table's default padding (0, 1): one space each side, edges included


BOLD = ("\x1b[1m", "\x1b[0m")  # how every colour system writes Rich's "table.header" (bold)


def render(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    texts: Sequence[bool],
    width: int,
    *,
    bold_header: bool = False,
) -> str | None:
    """The table Rich would print at console ``width``, or None if this cannot tell.

    ``texts[i]`` says column ``i``'s cells are ``Text`` (taken literally) rather than ``str``
    (read for markup and emoji codes, so they must be plainer). ``bold_header``: the console
    writes styles (a colour terminal), so the header row's segments come out bold, each on its
    own as Rich writes them; the other rows have no style.
    """
    for row in (header, *rows):
        for cell, is_text in zip(row, texts, strict=True):
            if not _ASCII.fullmatch(cell):
                return None
            if not is_text and not _PLAIN.fullmatch(cell) and not _TIME.fullmatch(cell):
                return None
    if width - PAD < 1:
        return None
    columns = list(zip(header, *rows, strict=True))
    widths = [_measure(cells, width) or 1 for cells in columns]
    if sum(widths) > width:
        widths = _collapse(widths, width)
        if sum(widths) > width:
            widths = _ratio_reduce(sum(widths) - width, [1] * len(widths), widths, widths)
        widths = [_measure(cells, w) for cells, w in zip(columns, widths, strict=True)]
    if sum(widths) > width or min(widths) - PAD < 1:
        return None
    out: list[str] = []
    for index, row in enumerate((header, *rows)):
        cells = [_wrap(text, w - PAD) for text, w in zip(row, widths, strict=True)]
        height = max(len(lines) for lines in cells)
        for n in range(height):
            parts = []
            for lines, w in zip(cells, widths, strict=True):
                if index == 0:  # the header sits at the bottom of its row
                    at = n - (height - len(lines))
                    parts.append(_header_part(lines[at] if at >= 0 else None, w, bold_header))
                else:
                    parts.append(f" {lines[n] if n < len(lines) else ' ' * (w - PAD)} ")
            out.append("".join(parts) + "\n")
    return "".join(out)


def _header_part(line: str | None, width: int, bold: bool) -> str:
    """A header cell's line (None: a blank above its text) as Rich writes it: bold, a blank is
    one segment and a text line three (pad, text, pad)."""
    on, off = BOLD if bold else ("", "")
    if line is None:
        return f"{on}{' ' * width}{off}"
    return f"{on} {off}{on}{line}{off}{on} {off}"


def _measure(cells: Sequence[str], width: int) -> int:
    """The column's maximum width at ``width``, as ``Table._measure_column`` finds it."""
    if width < 1:
        return 0
    if width - PAD < 1:
        return width
    return min(max(min(min(len(c), width) + PAD, width) for c in cells), width)


def _collapse(widths: list[int], max_width: int) -> list[int]:
    """``Table._collapse_widths`` with every column wrappable."""
    total = sum(widths)
    excess = total - max_width
    while total and excess > 0:
        widest = max(widths)
        second = max((w for w in widths if w != widest), default=0)
        difference = widest - second
        ratios = [1 if w == widest else 0 for w in widths]
        if not difference:
            break
        widths = _ratio_reduce(excess, ratios, [min(excess, difference)] * len(widths), widths)
        total = sum(widths)
        excess = total - max_width
    return widths


def _ratio_reduce(
    total: int, ratios: list[int], maximums: list[int], values: list[int]
) -> list[int]:
    """``rich._ratio.ratio_reduce``."""
    ratios = [r if m else 0 for r, m in zip(ratios, maximums, strict=True)]
    total_ratio = sum(ratios)
    if not total_ratio:
        return values[:]
    remaining = total
    result: list[int] = []
    for ratio, maximum, value in zip(ratios, maximums, values, strict=True):
        if ratio and total_ratio > 0:
            distributed = min(maximum, round(ratio * remaining / total_ratio))
            result.append(value - distributed)
            remaining -= distributed
            total_ratio -= ratio
        else:
            result.append(value)
    return result


def _breaks(text: str, width: int) -> list[int]:
    """``rich._wrap.divide_line(text, width, fold=False)`` for ASCII text."""
    found: list[int] = []
    offset = 0
    for match in _WORD.finditer(text):
        start, word = match.start(), match.group(0)
        length = len(word.rstrip())
        if width - offset >= length:
            offset += len(word)
        elif length > width:
            if start:
                found.append(start)
            offset = len(word)
        elif offset and start:
            found.append(start)
            offset = len(word)
    return found


def _wrap(text: str, width: int) -> list[str]:
    """``Text.wrap`` (justify left, overflow ellipsis) for one line of ASCII, padded."""
    offsets = [0, *_breaks(text, width), len(text)]
    lines = [text[a:b] for a, b in pairwise(offsets)] or [""]
    out = []
    for line in lines:
        if len(line) > width and (space := _TRAILING.search(line)):
            line = line[: len(line) - min(len(space.group(0)), len(line) - width)]
        if len(line) > width:
            line = line[: width - 1] + "\u2026"
        out.append(line.ljust(width))
    return out
