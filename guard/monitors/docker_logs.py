"""Follow the stdout and stderr of the selected containers and turn matching lines into signals.

Each container's log stream (``GET /containers/{id}/logs?follow=1&timestamps=1``) is read by a
task on the monitor's loop (``guard.monitors.docker_stream``), not a thread, and split into
lines, each with the engine's nanosecond timestamp. The position is kept per container name
and stream: the timestamp of the last line counted and how many lines carried exactly that
timestamp. A stream is reopened with ``since`` at the earliest stored position and lines at or
before it are skipped, so after a restart of Guard, or of the container, or a container
recreated under the same name, every line counts exactly once. The positions travel in the
``Observation`` that counts the lines, so they are stored with the incidents in one
transaction. Lines join into multi-line events per stream (``guard.monitors.multiline``); the
last event waits for its end or ``flush_after``, and its lines are not part of the stored
position until counted. A line is never held longer than ``max_line_bytes`` nor
``flush_after`` (``_Lines``).
"""

from __future__ import annotations

import asyncio
import calendar
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from loguru import logger

from guard.domain.records import Observation
from guard.grouping.rules import RuleGrouper
from guard.monitors.docker_stream import Demux, engine_session
from guard.monitors.matcher import LineMatcher
from guard.monitors.multiline import Context, Event, Framer
from guard.playbooks.models import LogRule

STREAMS = {1: "stdout", 2: "stderr"}
Item = tuple[str, str, int, bytes] | tuple[str, None, int, bytes]  # name, stream, ts, line
Queue = asyncio.Queue[Item]
QUEUE_LINES = 10_000  # lines read but not yet counted; a full queue pauses the readers


def parse_ts(raw: bytes) -> int:
    """Nanoseconds since the epoch of an RFC 3339 timestamp as the engine writes it
    (``2026-12-05T06:53:04.009592904Z``; ValueError for anything else). Read per line, on
    the loop: fields by position, not ``strptime`` (5x the cost)."""
    whole, _, frac = raw.rstrip(b"Z").partition(b".")
    if len(whole) != 19 or whole[4:5] != b"-" or whole[10:11] not in (b"T", b" "):
        raise ValueError(f"not an engine timestamp: {raw[:40]!r}")
    fields = (whole[0:4], whole[5:7], whole[8:10], whole[11:13], whole[14:16], whole[17:19])
    seconds = calendar.timegm((*map(int, fields), 0, 0, 0))
    return seconds * 1_000_000_000 + int((frac[:9] or b"0").ljust(9, b"0"))


class _Lines:
    """One container's output split into lines per stream, none held longer than ``keep``
    bytes nor than ``flush_after`` seconds: a longer line is handed over cut (its rest is
    dropped up to the newline), and so is one whose newline is late (a prompt, a line with no
    newline for an hour). Memory stays at most ``keep`` per stream, however long it lasts."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.parts: dict[int, bytes] = {}  # stream -> the line begun
        self.begun: dict[int, float] = {}  # stream -> when that line's first bytes came
        self.over: set[int] = set()  # streams inside a line already handed over

    def feed(self, stream: int, data: bytes) -> list[tuple[int, bytes]]:
        if stream in self.over:
            nl = data.find(b"\n")
            if nl < 0:
                return []
            self.over.discard(stream)
            data = data[nl + 1 :]
        *whole, rest = (self.parts.pop(stream, b"") + data).split(b"\n")
        out = [(stream, line) for line in whole]
        if len(rest) > self.keep:
            out.append((stream, rest[: self.keep]))
            self.over.add(stream)
            self.begun.pop(stream, None)
        elif rest:
            self.parts[stream] = rest
            if whole or stream not in self.begun:
                self.begun[stream] = time.monotonic()
        else:
            self.begun.pop(stream, None)
        return out

    def due(self, after: float) -> float | None:
        """Seconds until the oldest line begun is handed over as it is (None: none begun)."""
        if not self.begun:
            return None
        return max(0.0, min(self.begun.values()) + after - time.monotonic())

    def flush(self, after: float) -> list[tuple[int, bytes]]:
        """The lines begun ``after`` seconds ago or more, handed over without their newline."""
        now = time.monotonic()
        late = [s for s, at in self.begun.items() if now - at >= after]
        for stream in late:
            del self.begun[stream]
            self.over.add(stream)
        return [(stream, self.parts.pop(stream)) for stream in late]

    def held(self) -> int:
        return sum(len(part) for part in self.parts.values())


@dataclass
class _Pending:
    """One stream's lines read but not yet counted (the last event may go on)."""

    lines: list[bytes] = field(default_factory=list)
    stamps: list[int] = field(default_factory=list)
    last_at: float = 0.0
    absorbing: Context | None = None  # inside an event counted capped: its rest is skipped
    wait: float = 1.0  # how long the last event waits after its last line (``Framer.wait_for``)


class ContainerLogs:
    """The log side of one docker monitor: streams, positions, framing."""

    def __init__(
        self,
        monitor_id: str,
        rules: list[LogRule],
        matcher: LineMatcher,
        groupers: list[RuleGrouper],
        framer: Framer,
        limit: int,
        tally: Callable[..., Any],
    ) -> None:
        self.monitor_id = monitor_id
        self._rules, self._matcher, self._groupers = rules, matcher, groupers
        self._framer, self._limit, self._new_tally = framer, limit, tally
        self.positions: dict[str, dict[str, list[int]]] = {}  # name -> stream -> [ts, n at ts]
        self.since = time.time_ns()  # where a name never seen starts (Guard's start)
        self._pending: dict[tuple[str, str], _Pending] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}  # name -> the task reading its stream
        self._lines: dict[str, _Lines] = {}  # name -> its lines not ended yet
        self._targets: dict[str, tuple[str, bool]] = {}  # name -> (id, tty), latest
        self._again: set[str] = set()  # started again while its old stream was still open
        self._skip: dict[tuple[str, str], int] = {}  # lines at the stored timestamp to skip
        self._queue: Queue | None = None
        self._session: aiohttp.ClientSession | None = None
        self._base = ""

    # -- state ----------------------------------------------------------------------------------

    def restore(self, state: dict[str, Any]) -> None:
        self.since = int(state.get("since") or self.since)
        logs = state.get("logs") or {}
        self.positions = {n: {s: list(p) for s, p in v.items()} for n, v in logs.items()}

    def state(self) -> dict[str, Any]:
        """A copy of the positions: the observation that carries them may be stored after later
        lines moved them on, and must not claim lines whose signals are not stored with it."""
        logs = {n: {s: list(p) for s, p in v.items()} for n, v in self.positions.items()}
        return {"since": self.since, "logs": logs}

    def _start_ns(self, name: str) -> int:
        streams = self.positions.get(name)
        return min((p[0] for p in streams.values()), default=self.since) if streams else self.since

    def _new_line(self, name: str, stream: str, ts: int) -> bool:
        """Whether a line read is past the stored position (not counted before)."""
        stored = self.positions.get(name, {}).get(stream)
        if stored is None:
            return ts >= self.since
        if ts != stored[0]:
            return ts > stored[0]
        left = self._skip.get((name, stream), 0)  # n lines at that timestamp were counted
        self._skip[(name, stream)] = left - 1
        return left <= 0

    # -- streams (one task each) -----------------------------------------------------------------

    def attach(self, container_id: str, name: str, tty: bool) -> None:
        """Follow one container's logs (again, after it restarted) unless already followed."""
        if self._queue is None:
            return
        self._targets[name] = (container_id, tty)
        if name in self._tasks:
            self._again.add(name)  # reopened once the old stream has ended
            return
        for stream, (_, n) in self.positions.get(name, {}).items():
            self._skip[(name, stream)] = n
            self._pending.pop((name, stream), None)  # not counted: read again from ``since``
        since = self._start_ns(name)
        self._tasks[name] = asyncio.create_task(
            self._follow(container_id, name, tty, since), name=f"docker-logs-{name}"
        )

    async def _follow(self, cid: str, name: str, tty: bool, since: int) -> None:
        assert self._queue is not None
        queue = self._queue
        try:
            await self._read(cid, name, tty, since, queue)
        except asyncio.CancelledError:
            raise
        except Exception:  # the container went away or the engine dropped the stream
            logger.debug("the log stream of container {} ended", name)
        finally:
            self._lines.pop(name, None)
        await queue.put((name, None, 0, b""))

    async def _read(self, cid: str, name: str, tty: bool, since: int, queue: Queue) -> None:
        assert self._session is not None
        params = {
            "stdout": "1",
            "stderr": "1",
            "follow": "1",
            "timestamps": "1",
            "since": f"{since // 1_000_000_000}.{since % 1_000_000_000:09d}",
        }
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30)  # quiet for hours
        url = f"{self._base}/containers/{cid}/logs"
        async with self._session.get(url, params=params, timeout=timeout) as res:
            if res.status != 200:
                logger.debug("no logs for container {}: HTTP {}", name, res.status)
                return
            demux, lines = Demux(tty), _Lines(self._limit + 64)  # the line and its timestamp
            self._lines[name] = lines
            while True:
                try:
                    async with asyncio.timeout(lines.due(self._framer.flush_after)):
                        chunk = await res.content.readany()
                except TimeoutError:
                    chunk = None
                if chunk == b"":
                    return
                found = (
                    [] if chunk is None else [x for f in demux.feed(chunk) for x in lines.feed(*f)]
                )
                found += lines.flush(self._framer.flush_after)
                for stream, line in found:
                    stamp, _, text = line.partition(b" ")
                    try:
                        ts = parse_ts(stamp)
                    except ValueError:
                        continue
                    await queue.put((name, STREAMS.get(stream, "stdout"), ts, text.rstrip(b"\r")))

    def held_bytes(self) -> int:
        """Bytes of lines read but not ended yet, over every stream followed (bounded by
        ``max_line_bytes`` each, however long a line goes on)."""
        return sum(lines.held() for lines in self._lines.values())

    async def aclose(self) -> None:
        """End every stream and the session."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
        self._lines.clear()
        self._queue = None  # what an ending stream still hands over is dropped
        if self._session is not None:
            await self._session.close()
            self._session = None

    # -- the async side -------------------------------------------------------------------------

    async def bind(self, api: Any) -> None:
        """Start (again) on the running loop: nothing read but not counted is kept."""
        await self.aclose()
        self._session, self._base = engine_session(api)
        self._queue = asyncio.Queue(maxsize=QUEUE_LINES)
        self._pending.clear()
        self._again.clear()

    async def run(self, emit: Callable[[Observation], Any]) -> None:
        """Count lines as they come (batched per wake-up); emit with the new positions."""
        assert self._queue is not None
        queue = self._queue
        while True:
            timeout = self._next_flush()
            try:
                item = await asyncio.wait_for(queue.get(), timeout)
                items = [item]
                while not queue.empty() and len(items) < QUEUE_LINES:
                    items.append(queue.get_nowait())
            except TimeoutError:
                items = []
            tally = self._new_tally()
            touched: set[tuple[str, str]] = set()
            for name, stream, ts, line in items:
                if stream is None:
                    self._tasks.pop(name, None)
                    if name in self._again:
                        self._again.discard(name)
                        cid, tty = self._targets[name]
                        self.attach(cid, name, tty)
                    continue
                if not self._new_line(name, stream, ts):
                    continue
                pending = self._pending.setdefault(
                    (name, stream), _Pending(wait=self._framer.flush_after)
                )
                pending.lines.append(line)
                pending.stamps.append(ts)
                pending.last_at = time.monotonic()
                touched.add((name, stream))
            now = time.monotonic()
            for key, pending in list(self._pending.items()):
                quiet = now - pending.last_at >= pending.wait
                if key in touched or quiet:
                    self._count(key, pending, tally, final=quiet or not self._framer.enabled)
                if quiet:  # no line for its wait: an event being absorbed has ended too
                    pending.absorbing = None
                if not pending.lines and pending.absorbing is None:
                    del self._pending[key]
            signals = tally.result()
            if signals or touched:
                await emit(Observation(signals, self.state()))

    def _next_flush(self) -> float | None:
        if not self._pending:
            return None
        due = min(p.last_at + p.wait for p in self._pending.values())
        return max(0.01, due - time.monotonic())

    def _count(self, key: tuple[str, str], pending: _Pending, tally: Any, *, final: bool) -> None:
        """Count the pending lines but the last event (all of them when ``final``); lines that
        continue an event already counted capped (``absorbing``) are consumed silently."""
        if pending.absorbing is not None:
            at, pending.absorbing = self._framer.absorb(_block(pending.lines), pending.absorbing)
            self._consumed(key, pending, _block(pending.lines).count(b"\n", 0, at))
        block = _block(pending.lines)
        cut, upto = len(block), len(pending.lines)
        if not final:
            cut = self._framer.tail_start(block, len(block))
            pending.wait = self._framer.wait_for(block, cut)
            if len(block) - cut > self._framer.max_bytes:  # too long to hold: counted, capped
                pending.absorbing = self._framer.last_context(block, cut)
                cut = len(block)
            upto = block.count(b"\n", 0, cut)
        if upto == 0:
            return
        name, stream = key
        counted = block[:cut]
        found = self._matcher.scan(counted, self._limit)
        items = self._framer.frame(counted, found) if self._framer.enabled else found
        for item in items:
            event = item if isinstance(item, Event) else None
            index = item.index if isinstance(item, Event) else item[0]
            text = item.line if isinstance(item, Event) else item[1]
            tally.add(
                self._rules[index],
                self._groupers[index],
                text,
                event=event,
                stream=stream,
                target=name,
            )
        self._consumed(key, pending, upto)

    def _consumed(self, key: tuple[str, str], pending: _Pending, upto: int) -> None:
        """Move the stored position past the first ``upto`` pending lines and drop them."""
        if upto == 0:
            return
        name, stream = key
        last = pending.stamps[upto - 1]
        same = sum(1 for ts in pending.stamps[:upto] if ts == last)
        stored = self.positions.setdefault(name, {}).get(stream)
        if stored is not None and stored[0] == last:
            same += stored[1]
        self.positions[name][stream] = [last, same]
        del pending.lines[:upto], pending.stamps[:upto]


def _block(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)
