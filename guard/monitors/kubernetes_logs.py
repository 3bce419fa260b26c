"""Follow the selected pods' container logs and turn lines that match a ``logs`` rule into signals.

The counting is the Docker log monitor's (``guard.monitors.docker_logs.ContainerLogs``): lines
join into multi-line events, positions are ``[timestamp ns, lines at it]`` per stream and are
stored with the incidents. Only the stream differs: each running container instance (its
``containerID``) is read through ``GET .../pods/{pod}/log?follow=true&timestamps=true
&sinceTime=...&container=c`` by a stream task whose blocking read runs in a worker thread.
``sinceTime`` has whole-second precision, so the
server sends again the lines of the stored second; lines at or before the stored nanosecond
timestamp (and as many at it as were counted) are skipped, so a restart counts nothing twice.

A stream ends when its instance stops (the kubelet closes it) or the connection drops. The
monitor calls ``sync`` on every pod it learns about (and every ``RESYNC`` seconds): an instance
that runs and is not followed is followed, from the stored position; a new instance of a
container is followed once the old stream has ended. At most ``MAX_STREAMS`` containers are
followed at once; a line longer than ``max_line_bytes`` keeps its first bytes only; a stream
waits while ``BACKLOG`` lines wait to be counted.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import copy
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from loguru import logger

from guard.domain.records import Signal
from guard.k8s.pods import workload
from guard.monitors.docker_logs import ContainerLogs, Queue, parse_ts
from guard.monitors.logfile import Tally
from guard.playbooks.models import KubernetesMonitorSpec, LogRule

MAX_STREAMS = 100  # containers followed at once; more are named in a warning, not followed
READ = 64 * 1024  # bytes read from a stream at a time
QUIET = 3600.0  # a follow stream silent this long is reopened (from the stored position)
STREAM = "log"  # the API interleaves stdout and stderr: one position per container
BACKLOG = 1000  # lines read but not yet taken by the counting; a stream waits above it


def parse_stamp(raw: bytes) -> int:
    """Nanoseconds since the epoch of an RFC 3339 timestamp (``Z`` or a ``+hh:mm`` offset)."""
    text, shift = raw.strip(), 0
    if len(text) > 6 and text[-6:-5] in (b"+", b"-") and text[-3:-2] == b":":
        sign = 1 if text[-6:-5] == b"+" else -1
        shift = sign * (int(text[-5:-3]) * 3600 + int(text[-2:]) * 60)
        text = text[:-6]
    return parse_ts(text) - shift * 1_000_000_000


def since_time(ns: int) -> str:
    """``sinceTime`` for a position: its second (the server's precision), in RFC 3339."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ns // 1_000_000_000))


def split_lines(chunks: Iterable[bytes], keep: int) -> Iterator[bytes]:
    """The whole lines of a byte stream, each cut to its first ``keep`` bytes (the rest of an
    over-long line is dropped as it arrives, so an endless line holds ``keep`` bytes)."""
    part, over = b"", False
    for data in chunks:
        if over:
            nl = data.find(b"\n")
            if nl < 0:
                continue
            yield part
            part, over, data = b"", False, data[nl + 1 :]
        *whole, rest = (part + data).split(b"\n")
        for line in whole:
            yield line[:keep]
        part, over = rest[:keep], len(rest) > keep


class PodTally(Tally):
    """A ``Tally`` whose signals name the pod's container and carry its workload."""

    def __init__(self, monitor_id: str, namespace: str, about: dict[str, dict[str, Any]]) -> None:
        super().__init__(monitor_id, "", source="kubernetes")
        self.namespace, self.about = namespace, about

    def add(
        self,
        rule: LogRule,
        grouper: Any,
        line: str,
        cut_at: int | None = None,
        event: Any = None,
        stream: str | None = None,
        target: str | None = None,
        seen: str | None = None,
    ) -> None:
        super().add(rule, grouper, line, cut_at, event, None, f"{self.namespace}/{target}", seen)

    def result(self) -> list[Signal]:
        cut = len(self.namespace) + 1
        return [
            replace(s, details={**self.about.get(s.target[cut:], {}), **s.details})
            for s in super().result()
        ]


class PodLogs(ContainerLogs):
    """The log side of one kubernetes monitor: a ``ContainerLogs`` read from the pods' API.

    The counting, positions and stream tasks are the base class's; only ``_read`` differs: the
    Kubernetes client is blocking, so each stream is read in a worker thread that hands its
    lines to the (bounded) queue and so waits while the counting is behind."""

    def __init__(self, spec: KubernetesMonitorSpec, **parts: Any) -> None:
        super().__init__(spec.id, tally=self._tally, **parts)
        self.namespace = spec.namespace
        self.about: dict[str, dict[str, Any]] = {}  # "pod/container" -> details of its signals
        self.carry: dict[str, Any] = {}  # the rest of the monitor's state (its events)
        self._ids: dict[str, str] = {}  # "pod/container" -> the instance followed
        self._kube: Any = None
        self._warned = False

    def _tally(self) -> PodTally:
        return PodTally(self.monitor_id, self.namespace, self.about)

    def baseline(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        """Resume from the stored positions (None), or start from now (the state to store)."""
        if not state:
            return self.state()
        self.restore(dict(state))
        return None

    def restore(self, state: dict[str, Any]) -> None:
        super().restore(state)
        self.carry = {k: v for k, v in state.items() if k not in ("since", "logs")}

    def state(self) -> dict[str, Any]:
        return {**self.carry, "since": self.since, "logs": copy.deepcopy(self.positions)}

    async def bind(self, api: Any = None) -> None:
        """Start (again) on the running loop: nothing read but not counted is kept. The queue
        holds at most ``BACKLOG`` lines and the end of a stream, so a stream that never ends
        waits in TCP rather than in memory."""
        await self.aclose()
        self._queue = asyncio.Queue(maxsize=BACKLOG + 1)
        self._pending.clear()
        self._again.clear()

    # -- which containers to follow (on the event loop) -----------------------------------------

    def sync(self, kube: Any, pods: Iterable[dict[str, Any]]) -> None:
        """Follow every running container instance of ``pods`` (all the pods known) that is not
        followed; forget the positions of containers that are gone."""
        self._kube = kube
        about: dict[str, dict[str, Any]] = {}
        running: dict[str, str] = {}
        for pod in pods:
            name = pod["metadata"]["name"]
            kind, owner = workload(pod)
            base = {"namespace": self.namespace, "pod": name, "workload_kind": kind}
            base.update(workload=owner, **({"deployment": owner} if kind == "Deployment" else {}))
            for cs in (pod.get("status") or {}).get("containerStatuses") or []:
                key = f"{name}/{cs.get('name')}"
                about[key] = {**base, "container": cs.get("name")}
                if "running" in (cs.get("state") or {}) and cs.get("containerID"):
                    running[key] = str(cs["containerID"])
        self.about.clear()
        self.about.update(about)
        for gone in set(self.positions) - set(about):
            del self.positions[gone]
        left_out = 0
        for key in sorted(running):
            if key in self._tasks and self._ids.get(key) == running[key]:
                continue
            if key not in self._tasks and len(self._tasks) >= MAX_STREAMS:
                left_out += 1
                continue
            self._ids[key] = running[key]
            self.attach(running[key], key, False)
        if left_out and not self._warned:
            self._warned = True
            logger.warning(
                "monitor {}: {} more containers run than the {} whose logs are followed",
                self.monitor_id,
                left_out,
                MAX_STREAMS,
            )

    # -- one stream (a worker thread, for the blocking client) ----------------------------------

    async def _read(self, cid: str, name: str, tty: bool, since: int, queue: Queue) -> None:
        loop = asyncio.get_running_loop()
        ended: asyncio.Future[None] = loop.create_future()
        opened: dict[str, Any] = {}

        def pump() -> None:  # a thread of its own: a stream blocks it for as long as it lasts
            try:
                self._pump(name, since, queue, loop, opened)
            finally:
                with contextlib.suppress(RuntimeError):  # the loop has closed: Guard stopped
                    loop.call_soon_threadsafe(_settle, ended)

        threading.Thread(target=pump, name=f"k8s-logs-{name}", daemon=True).start()
        try:
            await ended
        finally:  # cancelled (Guard stops): shutting the socket down wakes the reading thread
            if (sock := opened.get("sock")) is not None:
                with contextlib.suppress(Exception):
                    sock.shutdown(socket.SHUT_RDWR)

    def _pump(
        self,
        name: str,
        since: int,
        queue: Queue,
        loop: asyncio.AbstractEventLoop,
        opened: dict[str, Any],
    ) -> None:
        pod, container = name.split("/", 1)
        res = None
        try:
            res = self._kube.pod_log(
                self.namespace,
                pod,
                container,
                follow=True,
                since_time=since_time(since),
                read_timeout=QUIET,
            )
            with contextlib.suppress(AttributeError):
                opened["sock"] = res.connection.sock
            if self._queue is not queue:  # closed while the request was on its way
                return
            for line in split_lines(res.stream(READ), self._limit + 64):
                stamp, _, text = line.partition(b" ")
                try:
                    ts = parse_stamp(stamp)
                except (ValueError, OverflowError):
                    continue
                if self._queue is not queue:  # closed, or bound again: this stream is over
                    return
                item = (name, STREAM, ts, text.rstrip(b"\r"))
                if not _hand_over(queue, item, loop, lambda: self._queue is queue):
                    return
        except Exception as exc:  # the instance stopped, the pod went away, the API dropped it
            logger.debug("the log stream of {}/{} ended: {}", self.namespace, name, exc)
        finally:
            if res is not None:
                with contextlib.suppress(Exception):
                    res.close()


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _hand_over(
    queue: Queue, item: Any, loop: asyncio.AbstractEventLoop, current: Callable[[], bool]
) -> bool:
    """Put ``item`` on the loop's queue from a thread, waiting while it is full; False once the
    queue is no longer the one being counted (closed or bound again) or the loop is gone."""
    future = asyncio.run_coroutine_threadsafe(queue.put(item), loop)
    while True:
        try:
            future.result(timeout=1.0)
            return True
        except concurrent.futures.TimeoutError:
            if not current() or loop.is_closed():
                future.cancel()
                return False


def pod_logs(spec: KubernetesMonitorSpec) -> PodLogs:
    """The log side of a kubernetes monitor with ``logs`` rules."""
    from guard.monitors.logfile import groupers_of
    from guard.monitors.matcher import LineMatcher
    from guard.monitors.multiline import Framer

    return PodLogs(
        spec,
        rules=list(spec.logs),
        matcher=LineMatcher([(r.pattern, r.ignore_case) for r in spec.logs]),
        groupers=groupers_of(spec),
        framer=Framer(spec.multiline_spec),
        limit=spec.max_line_bytes,
    )
