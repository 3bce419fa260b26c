"""Where a shell command's characters stand: outside quotes, in ``"..."`` or in ``'...'``.

Templating (``guard.agent.templating``) quotes a value for the place it lands in, and the skill
writer (``guard.skills.writer``) replaces a target by ``$GUARD_TARGET`` only where the shell
expands it. Both need the same small scan of POSIX quoting: a backslash escapes the next character
outside single quotes; a quote opens or closes its own kind only.

Tested by ``tests/llm/test_proposal_binding.py``.
"""

from __future__ import annotations


def quote_states(text: str) -> list[str]:
    """The quote in force at each character of ``text``: ``""``, ``"'"`` or ``'"'``."""
    states, quote, i = [""] * len(text), "", 0
    while i < len(text):
        states[i] = quote
        c = text[i]
        if c == "\\" and quote != "'":
            if i + 1 < len(text):
                states[i + 1] = quote
            i += 2
            continue
        if c in "'\"" and quote in ("", c):
            quote = "" if quote else c
        i += 1
    return states
