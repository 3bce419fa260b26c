"""The text of a lesson: how a human's verified fix is generalised into a skill's steps,
trigger and name (``guard.skills.writer`` writes them; ``guard.agent.human`` runs a shell fix
as ``fix_script`` so what is saved is exactly what ran).

Tests: tests/skills/test_lesson.py (and the writer's, tests/skills/test_skills.py).
"""

from __future__ import annotations

import re
from typing import Any

from guard.skills.model import NAME_RE
from guard.util.shellquote import quote_states

_VARIES = re.compile(r"\d|[0-9a-fA-F]{8,}")  # a token holding a number or an id varies
_WORD = r"[A-Za-z0-9_.-]"  # what may not touch a target for it to count as a whole word
TRIGGER_CHARS = 300


def slug(text: str, limit: int = 40) -> str:
    out = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return re.sub(r"-{2,}", "-", out)[:limit].strip("-") or "x"


def valid_name(base: str, suffix: str = "") -> str:
    """``base`` (then ``suffix``) as a skill name: lowercase, digits, single hyphens, at most 64
    characters, no hyphen at either end; valid by construction."""
    tail = slug(suffix, 16) if suffix else ""
    head = slug(base, 64 - len(tail) - 1 if tail else 64)
    name = f"{head}-{tail}" if tail else head
    assert NAME_RE.match(name) and len(name) <= 64, name
    return name


def message_regex(message: str) -> str:
    """A regex matching ``message`` and its repeats with other timestamps, ids and numbers.

    Built from the message as written (whitespace kept exactly), anchored at its start: each
    token holding a number or an id becomes ``\\S+``, everything else is an escaped literal. No
    ``.+?`` chains: ``\\S+`` cannot cross the literal whitespace around it, so a hostile message
    costs linear time even in Python's ``re``.
    """
    head = message[:TRIGGER_CHARS]
    if len(message) > TRIGGER_CHARS and not message[TRIGGER_CHARS].isspace():
        head = re.sub(r"\S+\Z", "", head)  # whole tokens only
    parts = []
    for piece in re.split(r"(\s+)", head):
        if not piece:
            continue
        parts.append(r"\S+" if not piece.isspace() and _VARIES.search(piece) else re.escape(piece))
    return "^" + "".join(parts)


def _target_spans(text: str, target: str) -> list[tuple[int, int]]:
    if not target:
        return []
    rx = re.compile(f"(?<!{_WORD}){re.escape(target)}(?!{_WORD})")
    return [(m.start(), m.end()) for m in rx.finditer(text)]


def literal_template(text: str) -> str:
    """``text`` as a Jinja template that renders to itself (``{{ }}`` stays literal)."""
    if any(mark in text for mark in ("{{", "{%", "{#")):
        return (
            "{% raw %}"
            + text.replace("{% endraw %}", "{% endraw %}{{ '{% endraw %}' }}{% raw %}")
            + "{% endraw %}"
        )
    return text


def generalise(value: Any, target: str) -> Any:
    """An action argument with the incident's target, where it names it as a whole word, made
    ``{{ incident.target }}``; every other part kept literal."""
    if not isinstance(value, str):
        return value
    out, pos = [], 0
    for start, end in _target_spans(value, target):
        out += [literal_template(value[pos:start]), "{{ incident.target }}"]
        pos = end
    out.append(literal_template(value[pos:]))
    return "".join(out)


def shell_generalise(command: str, target: str) -> str:
    """``command`` with the target, where it stands as a whole word outside single quotes,
    replaced by ``$GUARD_TARGET`` quoted for where it is (``"$GUARD_TARGET"`` bare,
    ``${GUARD_TARGET}`` inside double quotes). Inside single quotes it stays literal."""
    spans = _target_spans(command, target)
    if not spans:
        return command
    states = quote_states(command)
    out, pos = [], 0
    for start, end in spans:
        where = states[start]
        if where == "'":
            continue
        out += [command[pos:start], '"$GUARD_TARGET"' if where == "" else "${GUARD_TARGET}"]
        pos = end
    out.append(command[pos:])
    return "".join(out)


def fix_script(fix: str, target: str, *, incident_id: Any, approver: str) -> str:
    """The script a human's shell fix runs as, and is saved as when it cures the incident:
    the fix as written (no templating, no ``set -eu``), the target made ``$GUARD_TARGET``."""
    who = " ".join(str(approver).split())
    return (
        f"#!/bin/sh\n# Learned from incident #{incident_id}, approved by {who}.\n"
        f"{shell_generalise(fix, target)}\n"
    )
