"""Railway log lines joined into multi-line events (``multiline``), the last one held back.

Railway hands each line of a stack trace over as a log line of its own, so the lines a check
reads are framed as one block by ``guard.monitors.multiline`` (a message holding newlines is
one line of the block). The last event may go on in lines Railway has not returned yet: an
event of several lines, or a line that may head one (``Framer.wait_for``), whose newest line
is younger than ``flush_after`` by Railway's timestamps is not counted by this check, and the
cursor stays before it, so the next check reads it again, whole. A lone line that heads
nothing is counted at once (waiting for it would cost a whole ``every``). Nothing is held in
memory between checks; an event longer than ``max_bytes`` is counted at once (capped).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

from guard.monitors.matcher import Match
from guard.monitors.multiline import SETTLE, Event, Framer
from guard.railway.cursor import normalise
from guard.railway.models import LogLine

Found = tuple[int, int, Event | None]  # the event's first line, the rule's index, the event


def block_of(texts: Sequence[str]) -> tuple[bytes, list[int]]:
    """The lines as one block (one line each) and where each starts (plus the block's end)."""
    raw = [t.encode("utf-8", "replace").replace(b"\r", b" ").replace(b"\n", b" ") for t in texts]
    offsets = [0]
    for line in raw:
        offsets.append(offsets[-1] + len(line) + 1)
    return b"".join(line + b"\n" for line in raw), offsets


def _when(line: LogLine) -> datetime:
    return datetime.fromisoformat(normalise(line.timestamp)[:26]).replace(tzinfo=UTC)


def complete(framer: Framer, lines: Sequence[LogLine], texts: Sequence[str]) -> int:
    """How many of ``lines`` (fresh, in time order) count now: all but a last event that may
    still go on."""
    if not framer.enabled or not lines:
        return len(lines)
    block, offsets = block_of(texts)
    cut = framer.tail_start(block, len(block))
    if len(block) - cut > framer.max_bytes:
        return len(lines)
    first = bisect_right(offsets, cut) - 1
    wait = framer.wait_for(block, cut)
    if wait <= SETTLE:  # a lone line that heads nothing
        return len(lines)
    newest = max(_when(line) for line in lines[first:])
    quiet = (datetime.now(UTC) - newest).total_seconds()
    return len(lines) if quiet >= wait else first


def matched(framer: Framer, texts: Sequence[str], indexes: Sequence[int | None]) -> Iterator[Found]:
    """The matched lines (``indexes``: each line's first matching rule), as single lines or
    as the multi-line events they belong to, each once."""
    if not framer.enabled:
        yield from ((i, index, None) for i, index in enumerate(indexes) if index is not None)
        return
    block, offsets = block_of(texts)
    found = []
    for i, index in enumerate(indexes):
        if index is not None:
            m = Match((index, texts[i]))
            m.start, m.stop = offsets[i], offsets[i + 1]
            found.append(m)
    for item in framer.frame(block, found):
        if isinstance(item, Event):
            yield bisect_right(offsets, item.start) - 1, item.index, item
        else:
            yield bisect_right(offsets, item.start) - 1, item[0], None
