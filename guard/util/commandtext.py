"""A command a human approves must be one they can read whole: its oddities, and its digest.

A proposal padded with 3,600 spaces shows as ``echo restarting payment-worker …`` on a phone
and runs its hidden tail; a bidi override or a zero-width character makes a command read
differently from what the shell runs; a control character is dropped or replaced on screen.
``oddities`` names each such thing, so a surface refuses the command or says what is odd
about it. ``digest`` binds an approval to the exact text shown: the command is carried out
only if its digest still matches when it runs.

Tested by ``tests/llm/test_proposal_binding.py``.
"""

from __future__ import annotations

import hashlib
import re

COMMAND_LIMIT = 1000
"""The longest proposed command offered to a human (it must fit any surface whole)."""
WHITESPACE_RUN = 16
"""Spaces or tabs in a row past this hide what follows them on a narrow screen."""

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_INVISIBLE = re.compile(r"[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
_ODD_SPACE = re.compile(r"[\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")
_RUN = re.compile(rf"[ \t]{{{WHITESPACE_RUN + 1},}}|\n[ \t]*\n[ \t]*\n")


def oddities(command: str, limit: int = COMMAND_LIMIT) -> list[str]:
    """What keeps a human from reading ``command`` exactly as it runs (empty: nothing)."""
    found: list[str] = []
    if len(command) > limit:
        found.append(f"it is {len(command):,} characters long, over the limit of {limit:,}")
    for pattern, what in (
        (_CONTROL, "a control character"),
        (_INVISIBLE, "an invisible or direction-changing character"),
        (_ODD_SPACE, "an unusual space character"),
    ):
        if m := pattern.search(command):
            more = len(pattern.findall(command)) - 1
            found.append(
                f"{what} (U+{ord(m.group()):04X}) at character {m.start() + 1:,}"
                + (f", and {more:,} more" if more else "")
            )
    if m := _RUN.search(command):
        kind = "blank lines" if "\n" in m.group() else "spaces or tabs"
        found.append(
            f"a run of {len(m.group()):,} {kind} at character {m.start() + 1:,}, "
            "which hides what follows it"
        )
    return found


def digest(command: str) -> str:
    """The SHA-256 of ``command`` as shown (hex): what an approval of it is bound to."""
    return hashlib.sha256(command.encode("utf-8", "surrogatepass")).hexdigest()


def short(digest_hex: str) -> str:
    """The first 12 hex digits: enough for a human to compare, and for ``--digest``."""
    return digest_hex[:12]


def approval_key(approval_id: str) -> str:
    """The state key under which an approval keeps the digest of the command it runs."""
    return f"approval:digest:{approval_id}"
