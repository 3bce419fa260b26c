"""Count journal entries exactly once across restarts, joining multi-line events per program.

Entries come in journal order. Each program of each target (``(target, ident)``: one key) has
its own pending lines, since the last event of a key may go on (``guard.monitors.multiline``);
they wait for a line that ends it or ``flush_after`` of quiet, as in ``docker_logs``, and a
pending event always begins at an entry (a ``MESSAGE`` of several lines is never split).

The state is where to resume: ``cursor``, the entry before the first one still pending (or the
last one read), and ``done``: for each key with entries counted after ``cursor``, the last of
them. Read again after a restart, a key's entries up to its ``done`` entry (found by cursor, or
else by time) are skipped, so nothing is counted twice and nothing pending is lost. Before any
entry is read, ``since`` (microseconds) says where "now" was when Guard first started.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from guard.grouping.rules import RuleGrouper
from guard.monitors.journal_entries import Entry
from guard.monitors.matcher import LineMatcher
from guard.monitors.multiline import Event, Framer
from guard.playbooks.models import LogRule

Key = tuple[str, str]  # (target, ident)
AHEAD = 1 << 62  # the order of a ``done`` entry restored but not read again yet


@dataclass(eq=False)
class _Mark:
    """Where an entry is: its order in this run, its cursor and time, the cursor before it."""

    seq: int
    cursor: str
    realtime: int
    before: str | None


@dataclass
class _Pending:
    lines: list[bytes] = field(default_factory=list)
    owner: list[_Mark] = field(default_factory=list)  # per line: its entry
    last_at: float = 0.0


class JournalTail:
    """The counting side of a journald monitor: pending events, positions, the tally."""

    def __init__(
        self,
        rules: list[LogRule],
        matcher: LineMatcher,
        groupers: list[RuleGrouper],
        framer: Framer,
        limit: int,
    ) -> None:
        self._rules, self._matcher, self._groupers = rules, matcher, groupers
        self.framer, self.limit = framer, limit
        self.restore({})

    # -- state ----------------------------------------------------------------------------------

    def restore(self, state: dict[str, Any]) -> None:
        """Start (again) from a stored state: nothing read but not counted is kept."""
        self.cursor: str | None = state.get("cursor") or None
        self.since: int | None = state.get("since") if self.cursor is None else None
        self._since_passed = False  # an entry at or after ``since`` came: the rest is new
        self._last = self.cursor
        self._seq = 0
        self._pending: dict[Key, _Pending] = {}
        self._done: dict[Key, _Mark] = {}
        for target, ident, cursor, realtime in state.get("done") or []:
            self._done[(target, ident)] = _Mark(AHEAD, cursor, int(realtime), None)

    def reopen(self) -> None:
        """Read on after the last entry read (journalctl reads from ``cursor`` on, inclusive)."""
        self.cursor = self._last

    def state(self) -> dict[str, Any]:
        cursor, upto = self._last, AHEAD - 1
        if self._pending:
            first = min((p.owner[0] for p in self._pending.values()), key=lambda m: m.seq)
            cursor, upto = first.before, first.seq
        done = [[*key, m.cursor, m.realtime] for key, m in self._done.items() if m.seq > upto]
        return {"cursor": cursor, "since": self.since if cursor is None else None, "done": done}

    def _new(self, key: Key, entry: Entry) -> bool:
        """Whether an entry read is past the stored position (not counted before)."""
        if self.since is not None and not self._since_passed:
            if entry.realtime < self.since:
                return False
            self._since_passed = True
        done = self._done.get(key)
        if done is None or done.seq != AHEAD:
            return True
        if entry.cursor == done.cursor:  # the last one counted: the rest is new
            done.seq = self._seq
            return False
        if entry.realtime <= done.realtime:
            return False
        done.seq = self._seq  # that entry is gone (vacuumed): this one is later
        return True

    # -- reading --------------------------------------------------------------------------------

    def add(self, entries: Iterable[Entry]) -> set[Key]:
        """Take entries read, in order; return the keys that got new lines."""
        touched: set[Key] = set()
        now = time.monotonic()
        for entry in entries:
            if entry.cursor == self.cursor:  # read from it (``--cursor``): counted before
                continue
            self._seq += 1
            mark = _Mark(self._seq, entry.cursor, entry.realtime, self._last)
            self._last = entry.cursor
            key = (entry.target, entry.ident)
            if not self._new(key, entry):
                continue
            pending = self._pending.setdefault(key, _Pending())
            pending.lines += entry.lines
            pending.owner += [mark] * len(entry.lines)
            pending.last_at = now
            touched.add(key)
        return touched

    def count(self, tally: Any, touched: set[Key], *, final: bool = False) -> None:
        """Count what is complete: all of a quiet key, all but the last event of a touched one
        (everything when ``final``: the reading ends)."""
        now = time.monotonic()
        for key, pending in list(self._pending.items()):
            quiet = final or now - pending.last_at >= self.framer.flush_after
            if key in touched or quiet:
                self._count(key, pending, tally, final=quiet or not self.framer.enabled)
            if not pending.lines:
                del self._pending[key]

    def next_flush(self) -> float | None:
        """Seconds until the oldest pending event is complete by ``flush_after`` (None: none)."""
        if not self._pending:
            return None
        oldest = min(p.last_at for p in self._pending.values())
        return max(0.01, oldest + self.framer.flush_after - time.monotonic())

    def _count(self, key: Key, pending: _Pending, tally: Any, *, final: bool) -> None:
        lines = pending.lines
        block = b"".join(line + b"\n" for line in lines)
        upto = len(lines)
        if not final:
            cut = self.framer.tail_start(block, len(block))
            if len(block) - cut <= self.framer.max_bytes:
                upto = block.count(b"\n", 0, cut)
                while 0 < upto < len(lines) and pending.owner[upto] is pending.owner[upto - 1]:
                    upto -= 1  # the last event starts inside an entry: hold all of it back
        if upto == 0:
            return
        cut = len(block) if upto == len(lines) else sum(len(x) + 1 for x in lines[:upto])
        rules, t = (self._rules, self._groupers), key[0]
        tally_block(block[:cut], self._matcher, self.framer, rules, self.limit, tally, target=t)
        self._done[key] = pending.owner[upto - 1]
        del lines[:upto], pending.owner[:upto]


def tally_block(
    block: bytes,
    matcher: LineMatcher,
    framer: Framer,
    rules: tuple[list[LogRule], list[RuleGrouper]],
    limit: int,
    tally: Any,
    **where: Any,
) -> None:
    """Count the matched lines and multi-line events of a block of whole lines (``rules``:
    the rules and their groupers; ``where``: the ``target``/``stream`` they are from)."""
    rules_, groupers = rules
    found = matcher.scan(block, limit)
    items: Iterable[Any] = framer.frame(block, found) if framer.enabled else found
    for item in items:
        event = item if isinstance(item, Event) else None
        index, text = (item.index, item.line) if event is not None else (item[0], item[1])
        tally.add(
            rules_[index],
            groupers[index],
            text,
            cut_at=limit if item.cut else None,
            event=event,
            **where,
        )
