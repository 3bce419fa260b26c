"""Turn a line's content into the tokens a template is mined from.

Masking first replaces what is plainly a value (timestamps, ids, addresses, numbers: the masks
of ``guard.domain.fingerprint``) plus the values that real logs glue to words or wrap in other text:
``blk_-695...``, ``x1``, ``host:port``, paths, URLs, quoted strings, ``key=value`` values. Then
the content is split on white space. The miner learns the rest (user names, hostnames, words
that vary) by comparing lines.

A line whose header no format recognised loses its leading header-only tokens instead: after
masking, a header is a run of placeholders (times, pids, hosts with numbers) and separators
in front of the first plain word.
"""

from __future__ import annotations

import re

from guard.domain.fingerprint import mask

_DURATION = re.compile(r"[<>~]?=?<num> ?(?:m?secs?|seconds?|ms|mins?|minutes?|hours?|hrs?|days?)\b")

# (pattern, replacement); applied in order, after ``mask``.
_EXTRA: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b[a-z][\w+.-]*://[^\s\"'<>]+"), "<url>"),  # before paths: URLs hold them
    (re.compile(r"'[^'\s][^']{0,200}'"), "<str>"),
    (re.compile(r'(?<==)"[^"\n]{0,200}"'), "<str>"),  # key="a value": one token
    (re.compile(r"(?<![\w.<>])(?:[A-Za-z]:)?(?:[\\/][\w.@%+~$<>-]+){2,}[\\/]?"), "<path>"),
    (re.compile(r"\b[\w-]+(?:\.[\w-]+)+:(?:\d+\b|<num>)"), "<addr>"),  # host:port
    (re.compile(r" \(<num>(?:\.<num>)?(?: ?[A-Za-z]{1,3})?\)"), ""),  # "123 bytes (0.1 KB)"
    (re.compile(r"(?<=[A-Za-z_])-?\d+(?:\.\d+)*"), "<num>"),  # blk_-695..., x1, t761, v2.3
    (re.compile(r"\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{6,}\b"), "<id>"),
    (re.compile(r"(?<=[A-Za-z_])-?<(?:id|num|hex)>"), "<num>"),  # blk_-<id> is blk_<num>
    (re.compile(r"(?<!<)\b\d+(?!>)"), "<num>"),  # what is left of numbers (-123, 12abc)
    # a duration is one value whatever its shape: "<1 sec", "5 ms" and "00:21" are one token each
    (_DURATION, "<num>"),
    (re.compile(r"(?<![\w<>-])-(?=<(?:num|hex|id)>)"), ""),  # a sign: -102 is a number like 5
]

_HEADER_TOKEN = re.compile(r"\S*<\w+>\S*|[\[(]?[-|*:]+[\])]?:?")
_MAX_HEADER_TOKENS = 10


def template_tokens(content: str, *, header: bool = False) -> list[str]:
    """The masked tokens of ``content``; ``header``: it may still start with a header."""
    out = mask(content)
    for pattern, placeholder in _EXTRA:
        out = pattern.sub(placeholder, out)
    tokens = out.split()
    return skip_header(tokens) if header else tokens


def skip_header(tokens: list[str]) -> list[str]:
    """``tokens`` without a leading run of header-only tokens (placeholders and separators:
    times, pids, hosts with numbers), keeping at least one token."""
    skip = 0
    while skip < min(_MAX_HEADER_TOKENS, len(tokens) - 1):
        token = tokens[skip]
        if not _HEADER_TOKEN.fullmatch(token):
            break
        skip += 1
    return tokens[skip:]
