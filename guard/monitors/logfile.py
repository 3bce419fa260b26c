"""Follow a log file and turn lines that match a rule into signals.

Position is ``(dev, inode, offset)``, persisted by the runner together with the incidents, so a
restart neither re-reads nor skips a line. The file is read in binary and split on ``\\n``; a
trailing line without its newline waits for the next check. Rotation (the path now names another
inode) finishes the old file first, through the handle still held or, after a restart, by finding
the renamed file beside it (``api.log.1``, ``api.log-20261202``); truncation starts over at 0.
Lines longer than ``max_line_bytes`` are cut for matching (the signal's ``line_cut_at_bytes``
says so); undecodable bytes are replaced.
Lines are matched a block (up to 1 MiB of whole lines) at a time by ``LineMatcher``, which asks
RE2 which lines can match before asking Python's ``re`` which rule does.
Lines that group alike (by default: the same masked tokens once the header is off; see
``guard.grouping.rules``) fold into one signal with a count.
Multi-line events (``multiline``; ``guard.monitors.multiline``) count once, by their summary
line, with the whole block as evidence. The last event read may go on: a check holds it back
(the position stays at its start) until a line ends it or the file has been quiet for
``flush_after``, waiting that long once within the check, so it is neither cut nor late.

"Start at the end" means the end when ``guard run`` starts (``baseline``), not when the first
scheduled check happens to run: a line written once Guard says it is running is never skipped.
A file missing then is read from its beginning when it appears (all of it is new).
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from guard.domain.exceptions import MonitorError
from guard.domain.records import Observation, Signal, utcnow
from guard.grouping.rules import RuleGrouper, masks, rule_groupers
from guard.monitors.logblocks import CHUNK, Blocks
from guard.monitors.matcher import LineMatcher, Match
from guard.monitors.multiline import Context, Event, Framer, context_of
from guard.playbooks.models import (
    DockerMonitorSpec,
    JournaldMonitorSpec,
    KubernetesMonitorSpec,
    LogfileMonitorSpec,
    LogRule,
)
from guard.util.threadbatch import ThreadBatch

LEARN_BYTES = 1 << 16  # read before the position to learn a header from (format: auto)
MAX_BYTES_PER_CHECK = 256 << 20  # bound one check's work; the next check continues
MAX_DISTINCT = 1000  # distinct messages kept per check; more fold into one overflow signal
MESSAGE_CHARS = 1000
# the scans of the checks started together share a worker hand-off (``guard.util.threadbatch``)
READS = ThreadBatch()


@dataclass
class _Position:
    dev: int
    ino: int
    offset: int
    skipping: bool = False  # inside an over-long line whose start was already matched
    event: dict[str, bool] | None = None  # inside a capped event already emitted (its context)

    def as_state(self) -> dict[str, Any]:
        state = {"dev": self.dev, "ino": self.ino, "offset": self.offset, "skipping": self.skipping}
        return state if self.event is None else {**state, "event": self.event}


@dataclass
class Tally:
    """Folds matched lines into at most ``MAX_DISTINCT`` signals."""

    monitor_id: str
    target: str
    source: str = "logfile"
    signals: dict[tuple[str, ...], Signal] = field(default_factory=dict)
    counts: dict[tuple[str, ...], int] = field(default_factory=dict)

    def add(
        self,
        rule: LogRule,
        grouper: RuleGrouper,
        line: str,
        cut_at: int | None = None,
        event: Event | None = None,
        stream: str | None = None,
        target: str | None = None,
        seen: str | None = None,
    ) -> None:
        """Count one matched line, or one multi-line ``event`` (``line``: what its rule matched;
        the message and the template come from its summary). ``target`` and ``stream``: the
        container and its stdout/stderr, for container logs; ``seen``: the summary's mask,
        when it was worked out with a batch (``guard.grouping.rules.masks``)."""
        summary = line if event is None else event.summary
        key, grouping = grouper.group(rule.kind, summary if grouper.templated else line, seen)
        if target is not None:
            key = (target, stream or "", *key)
        if key not in self.signals and len(self.signals) >= MAX_DISTINCT:
            key = (rule.kind, "<more distinct messages>")
        if key not in self.signals:
            details: dict[str, Any] = {"rule": rule.pattern}
            if event is not None:
                details.update(evidence=event.evidence, event_lines=event.lines)
            if stream is not None:
                details["stream"] = stream
            self.signals[key] = Signal(
                monitor_id=self.monitor_id,
                source=self.source,
                target=self.target if target is None else target,
                kind=rule.kind,
                severity=rule.severity,
                message=summary[:MESSAGE_CHARS],
                details=details,
                grouping=grouping,
            )
        if cut_at is not None:  # over the line budget: only its first bytes were matched
            self.signals[key].details["line_cut_at_bytes"] = cut_at
        self.counts[key] = self.counts.get(key, 0) + 1

    def result(self) -> list[Signal]:
        now = utcnow()
        return [
            Signal(**{**_fields(sig), "count": self.counts[key], "observed_at": now})
            for key, sig in self.signals.items()
        ]


def groupers_of(
    spec: LogfileMonitorSpec | DockerMonitorSpec | KubernetesMonitorSpec | JournaldMonitorSpec,
) -> list[RuleGrouper]:
    """One ``RuleGrouper`` per rule of a monitor with log rules."""
    return rule_groupers(
        [
            (r.group_by, re.compile(r.pattern, re.IGNORECASE if r.ignore_case else 0))
            for r in spec.rules
        ],
        default=spec.group_by,
        log_format=spec.format,
    )


def _fields(sig: Signal) -> dict[str, Any]:
    return {name: getattr(sig, name) for name in Signal.__dataclass_fields__}


class LogfileMonitor:
    """Watches one log file with an ordered list of rules (the first rule that matches wins)."""

    type = "logfile"

    def __init__(self, spec: LogfileMonitorSpec) -> None:
        self.spec = spec
        self.id = spec.id
        self.interval = spec.every
        self.jitter = spec.jitter
        self.path = Path(spec.path).absolute()  # the target, whatever the working directory
        self._rules = list(spec.rules)
        self._matcher = LineMatcher([(r.pattern, r.ignore_case) for r in spec.rules])
        self._groupers = groupers_of(spec)
        self._framer = Framer(spec.multiline_spec)
        self._handle: BinaryIO | None = None
        self._handle_id: tuple[int, int] | None = None
        self._held_for: float | None = None  # seconds until the event held back is complete
        self._hold = False  # this scan leaves the last event for later
        self._capped: Context | None = None  # a too-long event just counted: absorb its rest

    async def check(self, state: Mapping[str, Any]) -> Observation:
        obs = await READS.run(self.scan, state, hold=True)
        if self._held_for is not None:  # the last event may go on: give it flush_after, once
            await asyncio.sleep(self._held_for)
            more = await READS.run(self.scan, obs.state, hold=True)
            obs = Observation([*obs.signals, *more.signals], more.state)
        return obs

    async def close(self) -> None:
        self._drop_handle()

    def baseline(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        """The starting position for a file never seen before (``None`` when ``state`` has one)."""
        if state or self.spec.start == "beginning":
            return None
        try:
            st = os.stat(self.path)
        except OSError:
            return {"position": None}  # not there yet: read it all when it appears
        return {"position": _Position(st.st_dev, st.st_ino, st.st_size).as_state()}

    # -- the scan, run in a worker thread -------------------------------------------------------

    def scan(self, state: Mapping[str, Any], *, hold: bool = False) -> Observation:
        """Read what was appended since ``state``; return signals and the new position.

        ``hold``: leave the last event for later if the file was written less than
        ``flush_after`` ago (it may go on); otherwise everything read is counted now.
        """
        self._held_for = None
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            raise MonitorError(f"log file {self.path} does not exist (check the path)") from None
        except OSError as exc:
            raise MonitorError(f"cannot stat log file {self.path}: {exc.strerror}") from None
        tally = Tally(self.id, str(self.path))
        quiet = time.time() - st.st_mtime
        self._hold = hold and self._framer.enabled and quiet < self._framer.flush_after
        if not state or state.get("position") is None:
            appeared = bool(state)  # baselined while missing: everything in it is new
            offset = 0 if appeared or self.spec.start == "beginning" else st.st_size
            pos = _Position(st.st_dev, st.st_ino, offset)
            if offset == 0:
                pos = self._read(pos, tally)
            return self._observed(tally, pos, quiet)
        old = _Position(**state["position"])
        budget = MAX_BYTES_PER_CHECK
        if (old.dev, old.ino) != (st.st_dev, st.st_ino):
            budget -= self._finish_rotated(old, tally)
            pos = _Position(st.st_dev, st.st_ino, 0)
        elif st.st_size < old.offset:
            pos = _Position(st.st_dev, st.st_ino, 0)  # truncated in place
        else:
            pos = old
        pos = self._read(pos, tally, budget=max(budget, CHUNK))
        return self._observed(tally, pos, quiet)

    def _observed(self, tally: Tally, pos: _Position, quiet: float) -> Observation:
        if self._held_for is not None:  # an event was held back: when it is complete
            self._held_for = max(0.05, self._framer.flush_after - quiet)
        return Observation(tally.result(), {"position": pos.as_state()})

    def _finish_rotated(self, old: _Position, tally: Tally) -> int:
        """Read the rest of the file we were following before it was rotated away."""
        handle = self._held_handle(old) or self._find_rotated(old)
        if handle is None:
            return 0
        try:
            handle.seek(old.offset)
            hold, self._hold = self._hold, False
            pos = self._consume(handle, old, tally, final=True, budget=MAX_BYTES_PER_CHECK)
            self._hold = hold
            return pos.offset - old.offset
        finally:
            handle.close()
            if handle is self._handle:
                self._handle, self._handle_id = None, None

    def _held_handle(self, old: _Position) -> BinaryIO | None:
        if self._handle is not None and self._handle_id == (old.dev, old.ino):
            return self._handle
        return None

    def _find_rotated(self, old: _Position) -> BinaryIO | None:
        folder, base = self.path.parent, self.path.name
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return None
        for entry in entries:
            if entry.name == base or not entry.name.startswith(base):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) == (old.dev, old.ino):
                try:
                    return open(entry.path, "rb", buffering=0)
                except OSError:
                    return None
        return None

    def _read(self, pos: _Position, tally: Tally, budget: int = MAX_BYTES_PER_CHECK) -> _Position:
        opened = self._handle is None or self._handle_id != (pos.dev, pos.ino)
        handle = self._open_current(pos)
        if opened and pos.offset and self._groupers[0].format.learning:
            # starting at the end, or after a restart: learn the header from the lines there,
            # once (a later check's lines before the position were learned as they were read)
            handle.seek(max(0, pos.offset - LEARN_BYTES))
            self._groupers[0].learn(
                handle.read(min(pos.offset, LEARN_BYTES)), cut=pos.offset > LEARN_BYTES
            )
        handle.seek(pos.offset)
        return self._consume(handle, pos, tally, final=False, budget=budget)

    def _open_current(self, pos: _Position) -> BinaryIO:
        if self._handle is not None and self._handle_id == (pos.dev, pos.ino):
            return self._handle
        self._drop_handle()
        try:
            # held across checks; unbuffered: each read asks for a MiB, and a buffer kept per
            # open file was 0.8 MB of Guard's memory at 200 log files
            handle = open(self.path, "rb", buffering=0)  # noqa: SIM115
        except OSError as exc:
            raise MonitorError(f"cannot open log file {self.path}: {exc.strerror}") from None
        st = os.fstat(handle.fileno())
        self._handle, self._handle_id = handle, (st.st_dev, st.st_ino)
        return handle

    def _drop_handle(self) -> None:
        if self._handle is not None:
            self._handle.close()
        self._handle, self._handle_id = None, None

    def _consume(
        self, handle: BinaryIO, pos: _Position, tally: Tally, *, final: bool, budget: int
    ) -> _Position:
        """Match every complete line from the handle's position; return the new position."""
        offset, skipping = pos.offset, pos.skipping
        limit = self.spec.max_line_bytes
        framer = self._framer if self._framer.enabled else None
        absorbing = context_of(pos.event)
        self._capped = None
        tail = None if framer is None else self._tail
        blocks = Blocks(
            handle,
            limit,
            final=final,
            budget=budget,
            tail=tail,
            tail_start=self._framer.tail_start,
            hold=self._hold,
        )
        for data, consumed, complete in blocks:
            offset += consumed
            if not complete:  # the start of an over-long line
                absorbing = None
                if not skipping:
                    self._tally(self._matcher.line(data, cut=True), tally)
                skipping = True
                continue
            if skipping:  # the block opens with the rest of an over-long line: already matched
                nl = data.find(b"\n")
                data = b"" if nl < 0 else data[nl + 1 :]
                skipping = False
            self._groupers[0].learn(data)  # format: auto learns the header from the first lines
            if framer is None:
                self._count(list(self._matcher.scan(data, limit)), tally)
                continue
            if absorbing is not None:  # the rest of a capped event: already counted
                at, absorbing = framer.absorb(data, absorbing)
                data = data[at:]
            self._frame(data, tally)
            if self._capped is not None:  # its last event was too long to hold: absorb the rest
                absorbing, self._capped = self._capped, None
        if blocks.held:
            self._held_for = 0.0
        return _Position(
            pos.dev, pos.ino, offset, skipping, None if absorbing is None else absorbing.as_state()
        )

    def _tail(self, buf: bytes, end: int) -> int:
        """Where to cut ``buf[:end]`` (whole lines): before its last event, which may go on;
        at ``end`` when that event is longer than ``max_bytes`` (it is counted, capped)."""
        cut = self._framer.tail_start(buf, end)
        if end - cut <= self._framer.max_bytes:
            return cut
        self._capped = self._framer.last_context(buf[:end], cut)
        return end

    def _frame(self, block: bytes, tally: Tally) -> None:
        """Count the matched lines and multi-line events of a block of whole lines."""
        found = self._matcher.scan(block, self.spec.max_line_bytes)
        self._count(list(self._framer.frame(block, found)), tally)

    def _count(self, items: list[Match | Event], tally: Tally) -> None:
        """Count a block's matched lines and events, their masks worked out in one batch."""
        seen = masks(
            self._groupers,
            [(i.index, i.summary) if isinstance(i, Event) else i for i in items],
        )
        cut_at = self.spec.max_line_bytes
        for item, mask in zip(items, seen, strict=True):
            if isinstance(item, Event):
                index, line, cut, event = item.index, item.line, item.cut, item
            else:
                (index, line), cut, event = item, item.cut, None
            tally.add(
                self._rules[index],
                self._groupers[index],
                line,
                cut_at=cut_at if cut else None,
                event=event,
                seen=mask,
            )

    def _tally(self, found: Match | None, tally: Tally) -> None:
        if found is not None:
            self._count([found], tally)
