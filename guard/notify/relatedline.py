"""The line an incident's question gets for its related signals, and where it goes in the text.

Plain text, escaped by each channel: ``guard.notify.related`` puts it in open questions,
``guard.notify.fanout`` keeps it in a closed one, and a grouped message carries it under the
incident's line (``member_text``).
"""

from __future__ import annotations

from guard.store.correlation import RelatedSignal
from guard.triage.correlation import signal_line
from guard.triage.related_groups import grouped

MARK = "Related signals ("
SHOWN = 5  # related signals named in the line; more are counted


def related_line(rows: list[RelatedSignal]) -> str:
    """The header line naming ``rows``, one per monitor and target (plain text, escaped by
    the caller)."""
    groups = grouped(rows)
    named = [signal_line(", ".join(g.kinds), g.target[:120], g.count) for g in groups[:SHOWN]]
    more = f"; and {len(groups) - SHOWN} more" if len(groups) > SHOWN else ""
    return f"{MARK}{len(groups)}): {'; '.join(named)}{more}"


def with_related(text: str, line: str) -> str:
    """``text`` (a question: its header, a blank line, the rest) with ``line`` as the last
    line of its header, in place of an older one."""
    head, sep, rest = text.partition("\n\n")
    kept = [h for h in head.split("\n") if not h.startswith(MARK)]
    return "\n".join([*kept, line]) + sep + rest


def related_in(text: str) -> str | None:
    """The related line in the header of a question ``text`` (None: it names none)."""
    head = text.partition("\n\n")[0]
    return next((h for h in head.split("\n") if h.startswith(MARK)), None)


def member_text(line: str, question: str) -> str:
    """An incident's line in a grouped message (``line``), with the related line of its
    ``question`` (as the channel escaped it) under it."""
    found = related_in(question)
    return f"{line}\n{found}" if found else line
