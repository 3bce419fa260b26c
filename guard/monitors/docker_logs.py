"""Follow the stdout and stderr of the selected containers and turn matching lines into signals.

Each container's log stream (``GET /containers/{id}/logs?follow=1&timestamps=1``) is read in a
worker thread and split into lines, each with the engine's nanosecond timestamp. The position is
kept per container name and stream: the timestamp of the last line counted and how many lines
carried exactly that timestamp. A stream is reopened with ``since`` at the earliest stored
position and lines at or before it are skipped, so after a restart of Guard, or of the
container, or a container recreated under the same name, every line counts exactly once. The
positions travel in the ``Observation`` that counts the lines, so they are stored with the
incidents in one transaction. Lines join into multi-line events per stream
(``guard.monitors.multiline``); the last event waits for its end or ``flush_after``, and its
lines are not part of the stored position until counted.
"""

from __future__ import annotations

import asyncio
import calendar
import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from loguru import logger

from guard.grouping.rules import RuleGrouper
from guard.monitors.matcher import LineMatcher
from guard.monitors.multiline import Event, Framer
from guard.playbooks.models import LogRule
from guard.records import Observation

STREAMS = {1: "stdout", 2: "stderr"}
Item = tuple[str, str, int, bytes] | tuple[str, None, int, bytes]  # name, stream, ts, line


def parse_ts(raw: bytes) -> int:
    """Nanoseconds since the epoch of an RFC 3339 timestamp as the engine writes it."""
    text = raw.decode("ascii", "replace").rstrip("Z")
    whole, _, frac = text.partition(".")
    seconds = calendar.timegm(time.strptime(whole[:19], "%Y-%m-%dT%H:%M:%S"))
    return seconds * 1_000_000_000 + int((frac[:9] or "0").ljust(9, "0"))


@dataclass
class _Pending:
    """One stream's lines read but not yet counted (the last event may go on)."""

    lines: list[bytes] = field(default_factory=list)
    stamps: list[int] = field(default_factory=list)
    last_at: float = 0.0


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
        self._streaming: dict[str, Any] = {}  # name -> the open response
        self._targets: dict[str, tuple[Any, str, bool]] = {}  # name -> (api, id, tty), latest
        self._again: set[str] = set()  # started again while its old stream was still open
        self._skip: dict[tuple[str, str], int] = {}  # lines at the stored timestamp to skip
        self._queue: asyncio.Queue[Item] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- state ----------------------------------------------------------------------------------

    def restore(self, state: dict[str, Any]) -> None:
        self.since = int(state.get("since") or self.since)
        logs = state.get("logs") or {}
        self.positions = {n: {s: list(p) for s, p in v.items()} for n, v in logs.items()}

    def state(self) -> dict[str, Any]:
        return {"since": self.since, "logs": self.positions}

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

    # -- streams (worker threads) ---------------------------------------------------------------

    def attach(self, api: Any, container_id: str, name: str, tty: bool) -> None:
        """Follow one container's logs (again, after it restarted) unless already followed."""
        if self._loop is None:
            return
        self._targets[name] = (api, container_id, tty)
        if name in self._streaming:
            self._again.add(name)  # reopened once the old stream has ended
            return
        self._streaming[name] = None
        for stream, (_, n) in self.positions.get(name, {}).items():
            self._skip[(name, stream)] = n
            self._pending.pop((name, stream), None)  # not counted: read again from ``since``
        since = self._start_ns(name)
        thread = threading.Thread(
            target=self._pump,
            args=(api, container_id, name, tty, since),
            name=f"docker-logs-{name}",
            daemon=True,
        )
        thread.start()

    def _pump(self, api: Any, cid: str, name: str, tty: bool, since: int) -> None:
        params = {
            "stdout": 1,
            "stderr": 1,
            "follow": 1,
            "timestamps": 1,
            "since": f"{since // 1_000_000_000}.{since % 1_000_000_000:09d}",
        }
        put = self._put
        try:
            # APIClient is a requests Session; the SDK's logs() drops which stream a frame is from
            url = f"{api.base_url}/v{api.api_version}/containers/{cid}/logs"
            res = api.get(url, params=params, stream=True, timeout=(30, None))  # quiet for hours
            res.raise_for_status()
            self._streaming[name] = res.raw.connection.sock
            parts: dict[int, bytes] = {}
            over: set[int] = set()  # streams inside a line longer than the limit
            keep = self._limit + 64  # the line and its timestamp
            for stream, data in _frames(res, tty):
                lines: list[bytes] = []
                if stream in over:  # drop the rest of an over-long line; its start is kept
                    nl = data.find(b"\n")
                    if nl < 0:
                        continue
                    over.discard(stream)
                    lines.append(parts.pop(stream, b""))
                    data = data[nl + 1 :]
                *whole, rest = (parts.get(stream, b"") + data).split(b"\n")
                lines += whole
                if len(rest) > keep:
                    rest = rest[:keep]
                    over.add(stream)
                parts[stream] = rest
                for line in lines:
                    stamp, _, text = line.partition(b" ")
                    try:
                        ts = parse_ts(stamp)
                    except ValueError:
                        continue
                    put((name, STREAMS.get(stream, "stdout"), ts, text.rstrip(b"\r")))
        except Exception:  # the container went away or the engine dropped the stream
            logger.debug("the log stream of container {} ended", name)
        finally:
            put((name, None, 0, b""))

    def _put(self, item: Item) -> None:
        loop, queue = self._loop, self._queue
        if loop is not None and queue is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: Guard is stopping
                loop.call_soon_threadsafe(queue.put_nowait, item)

    def close(self) -> None:
        """End every stream: shutting its socket down wakes the thread blocked reading it
        (closing the response from here would wait for that thread's lock)."""
        for sock in list(self._streaming.values()):
            with contextlib.suppress(Exception):
                sock.shutdown(socket.SHUT_RDWR)
        self._streaming.clear()
        self._loop = None  # what the ending threads still hand over is dropped

    # -- the async side -------------------------------------------------------------------------

    def bind(self) -> None:
        """Start (again) on the running loop: nothing read but not counted is kept."""
        self.close()
        self._loop = asyncio.get_running_loop()
        self._queue = asyncio.Queue()
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
                while not queue.empty() and len(items) < 10_000:
                    items.append(queue.get_nowait())
            except TimeoutError:
                items = []
            tally = self._new_tally()
            touched: set[tuple[str, str]] = set()
            for name, stream, ts, line in items:
                if stream is None:
                    self._streaming.pop(name, None)
                    if name in self._again:
                        self._again.discard(name)
                        self.attach(*self._targets[name][:2], name, self._targets[name][2])
                    continue
                if not self._new_line(name, stream, ts):
                    continue
                pending = self._pending.setdefault((name, stream), _Pending())
                pending.lines.append(line)
                pending.stamps.append(ts)
                pending.last_at = time.monotonic()
                touched.add((name, stream))
            now = time.monotonic()
            for key, pending in list(self._pending.items()):
                quiet = now - pending.last_at >= self._framer.flush_after
                if key in touched or quiet:
                    self._count(key, pending, tally, final=quiet or not self._framer.enabled)
                if not pending.lines:
                    del self._pending[key]
            signals = tally.result()
            if signals or touched:
                await emit(Observation(signals, self.state()))

    def _next_flush(self) -> float | None:
        if not self._pending:
            return None
        oldest = min(p.last_at for p in self._pending.values())
        return max(0.01, oldest + self._framer.flush_after - time.monotonic())

    def _count(self, key: tuple[str, str], pending: _Pending, tally: Any, *, final: bool) -> None:
        """Count the pending lines but the last event (all of them when ``final``)."""
        block = b"".join(line + b"\n" for line in pending.lines)
        cut, upto = len(block), len(pending.lines)
        if not final:
            cut = self._framer.tail_start(block, len(block))
            if len(block) - cut > self._framer.max_bytes:
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
        last = pending.stamps[upto - 1]
        same = sum(1 for ts in pending.stamps[:upto] if ts == last)
        stored = self.positions.setdefault(name, {}).get(stream)
        if stored is not None and stored[0] == last:
            same += stored[1]
        self.positions[name][stream] = [last, same]
        del pending.lines[:upto], pending.stamps[:upto]


def _frames(res: Any, tty: bool) -> Iterator[tuple[int, bytes]]:
    """``(stream number, bytes)`` of the response: multiplexed frames, or raw TTY output (all
    of it stdout). The body is chunked: read through urllib3, never from the bare socket."""
    raw = res.raw
    if tty:
        chunks = raw.read_chunked() if raw.chunked else raw.stream(4096)
        for chunk in chunks:
            yield 1, chunk
        return
    while True:
        header = raw.read(8)
        if len(header) < 8:
            return
        stream, length = struct.unpack(">BxxxL", header)
        data = raw.read(length) if length else b""
        if length and not data:
            return
        yield stream, data
