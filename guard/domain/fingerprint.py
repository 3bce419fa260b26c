"""Fingerprints: what makes two observations "the same problem".

A fingerprint hashes (source, target, kind, masked message). Masking replaces what varies between
repeats of one fault (timestamps, UUIDs, IPs, hex ids, numbers and durations) with placeholders,
so 10,000 copies of one error that differ only in those collapse into one incident.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

import re2

# (pattern, placeholder, literals that must all be in the text for the pattern to match: a cheap
# `in` test skips a regex pass that could not change anything; order matters, as each pass sees
# the output of the ones before it)
_MASKS: list[tuple[re.Pattern[str], str, tuple[str, ...]]] = [
    # ISO 8601 / RFC 3339 and common "2026-12-02 18:06:48,123" timestamps
    (
        re.compile(
            r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"
        ),
        "<ts>",
        ("-", ":"),
    ),
    # syslog "Dec  2 18:06:48"
    (
        re.compile(
            r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\s+\d{1,2}\s+"
            r"\d{2}:\d{2}:\d{2}\b"
        ),
        "<ts>",
        (":",),
    ),
    # nginx/apache "02/Dec/2026:18:06:48 +0000"
    (
        re.compile(r"\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2}(?:\s[+-]\d{4})?"),
        "<ts>",
        ("/", ":"),
    ),
    (re.compile(r"\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<ts>", (":",)),
    (
        re.compile(
            r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
        ),
        "<uuid>",
        ("-",),
    ),
    (re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?\b"), "<ip>", (".",)),
    (re.compile(r"\b(?:[0-9a-fA-F]{1,4}:){3,7}[0-9a-fA-F]{1,4}\b"), "<ip>", (":",)),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>", ("0x",)),
    # ids: any run of 8+ hex digits, including all-digit and all-letter ones ("89bbae50",
    # "38082745", "abbfddfa" are the same kind of value; no common word is 8+ letters of a-f)
    (re.compile(r"\b[0-9a-fA-F]{8,}\b"), "<id>", ()),
    (
        re.compile(r"\b\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h|d|kb|mb|gb|b)?\b", re.IGNORECASE),
        "<num>",
        (),
    ),
]


_LINEAR = re2.Options()
_LINEAR.log_errors = False
_LINEAR.never_capture = True
_NOT_PLAIN = re.compile(r"[^\t\x00\x20-\x7e]")  # where RE2 and Python may read classes apart


def _linear(pattern: re.Pattern[str]) -> Any:
    """The mask in RE2, to ask whether it matches anywhere (None: only Python may say)."""
    if pattern.flags & re.IGNORECASE:  # Python folds a few letters RE2 does not
        return None
    try:
        return re2.compile(pattern.pattern, _LINEAR)
    except re2.error:
        return None


_GATES = [_linear(pattern) for pattern, _, _ in _MASKS]


def _anywhere(gate: Any, data: bytes) -> bool:
    # the binding's low-level call: its ``search`` maps offsets back to characters, slower
    return bool(gate._regexp.Match(re2._Anchor.UNANCHORED, data, 0, len(data))[0] != (-1, -1))


def mask(message: str) -> str:
    """Replace the parts of ``message`` that vary between repeats with placeholders."""
    out = message
    for pattern, placeholder, needs in _MASKS:
        if all(literal in out for literal in needs):
            out = pattern.sub(placeholder, out)
    return " ".join(out.split())  # runs of whitespace (re's \s, str.isspace) become one space


def mask_many(messages: Sequence[str]) -> list[str]:
    """``[mask(m) for m in messages]``, with one regex pass per mask over all of them.

    The messages are joined with NUL, which no mask matches and which bounds ``\\b`` as the
    ends of a text do, so each keeps exactly its own result; a message holding a NUL is
    masked on its own. On printable ASCII (where RE2 reads ``\\d \\b \\s`` as Python does) a
    pass that RE2 finds nothing for is skipped: a mask that matches none of them costs one
    linear scan instead of Python's attempt at every position.
    """
    if len(messages) < 2 or any("\x00" in m for m in messages):
        return [mask(m) for m in messages]
    out = "\x00".join(messages)
    plain = _NOT_PLAIN.search(out) is None  # placeholders keep it so
    for (pattern, placeholder, needs), gate in zip(_MASKS, _GATES, strict=True):
        if not all(literal in out for literal in needs):
            continue
        if plain and gate is not None and not _anywhere(gate, out.encode()):
            continue
        out = pattern.sub(placeholder, out)
    return [" ".join(part.split()) for part in out.split("\x00")]


def fingerprint(source: str, target: str, kind: str, message: str) -> str:
    """A stable 16-hex-digit id for "this problem on this target"."""
    key = "\x1f".join((source, target, kind, mask(message)))
    return hashlib.sha256(key.encode("utf-8", "replace")).hexdigest()[:16]


def keyed_fingerprint(source: str, target: str, kind: str, key: str) -> str:
    """A fingerprint whose message part is a grouping key (``template:12``, ``rule:...``)."""
    material = "\x1f".join((source, target, kind, "\x1e" + key))
    return hashlib.sha256(material.encode("utf-8", "replace")).hexdigest()[:16]
