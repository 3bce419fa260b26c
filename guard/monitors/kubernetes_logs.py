"""Follow the selected pods' container logs and turn lines that match a ``logs`` rule into signals.

The counting is the Docker log monitor's (``guard.monitors.docker_logs.ContainerLogs``): lines
join into multi-line events, positions are ``[timestamp ns, lines at it]`` per stream and are
stored with the incidents. Only the stream differs: each running container instance (its
``containerID``) is read through ``GET .../pods/{pod}/log?follow=true&timestamps=true
&sinceTime=...&container=c`` in a worker thread. ``sinceTime`` has whole-second precision, so the
server sends again the lines of the stored second; lines at or before the stored nanosecond
timestamp (and as many at it as were counted) are skipped, so a restart counts nothing twice.

A stream ends when its instance stops (the kubelet closes it) or the connection drops. The
monitor calls ``sync`` on every pod it learns about (and every ``RESYNC`` seconds): an instance
that runs and is not followed is followed, from the stored position; a new instance of a
container is followed once the old stream has ended. At most ``MAX_STREAMS`` containers are
followed at once; a line longer than ``max_line_bytes`` keeps its first bytes only; a stream
waits while more than ``BACKLOG`` of its lines wait to be counted.
"""

from __future__ import annotations

import contextlib
import copy
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from loguru import logger

from guard.k8s.pods import workload
from guard.monitors.docker_logs import ContainerLogs, parse_ts
from guard.monitors.logfile import Tally
from guard.playbooks.models import KubernetesMonitorSpec, LogRule
from guard.records import Signal

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
    ) -> None:
        super().add(rule, grouper, line, cut_at, event, None, f"{self.namespace}/{target}")

    def result(self) -> list[Signal]:
        cut = len(self.namespace) + 1
        return [
            replace(s, details={**self.about.get(s.target[cut:], {}), **s.details})
            for s in super().result()
        ]


class PodLogs(ContainerLogs):
    """The log side of one kubernetes monitor: a ``ContainerLogs`` read from the pods' API."""

    def __init__(self, spec: KubernetesMonitorSpec, **parts: Any) -> None:
        super().__init__(spec.id, tally=self._tally, **parts)
        self.namespace = spec.namespace
        self.about: dict[str, dict[str, Any]] = {}  # "pod/container" -> details of its signals
        self.carry: dict[str, Any] = {}  # the rest of the monitor's state (its events)
        self._ids: dict[str, str] = {}  # "pod/container" -> the instance followed
        self._warned = False
        self._handed_lock = threading.Lock()  # streams hand lines over from their threads
        self._handed = self._arrived = 0

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

    # -- which containers to follow (on the event loop) -----------------------------------------

    def sync(self, kube: Any, pods: Iterable[dict[str, Any]]) -> None:
        """Follow every running container instance of ``pods`` (all the pods known) that is not
        followed; forget the positions of containers that are gone."""
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
            if key in self._streaming and self._ids.get(key) == running[key]:
                continue
            if key not in self._streaming and len(self._streaming) >= MAX_STREAMS:
                left_out += 1
                continue
            self._ids[key] = running[key]
            self.attach(kube, running[key], key, False)
        if left_out and not self._warned:
            self._warned = True
            logger.warning(
                "monitor {}: {} more containers run than the {} whose logs are followed",
                self.monitor_id,
                left_out,
                MAX_STREAMS,
            )

    # -- one stream (a worker thread) -----------------------------------------------------------

    def _pump(self, api: Any, cid: str, name: str, tty: bool, since: int) -> None:
        pod, container = name.split("/", 1)
        put = self._put
        res = None
        try:
            res = api.pod_log(
                self.namespace,
                pod,
                container,
                follow=True,
                since_time=since_time(since),
                read_timeout=QUIET,
            )
            with contextlib.suppress(AttributeError):
                self._streaming[name] = res.connection.sock
            if self._loop is None:  # closed while the request was on its way
                return
            for line in split_lines(res.stream(READ), self._limit + 64):
                stamp, _, text = line.partition(b" ")
                try:
                    ts = parse_stamp(stamp)
                except (ValueError, OverflowError):
                    continue
                self._wait_for_room()
                put((name, STREAM, ts, text.rstrip(b"\r")))
        except Exception as exc:  # the instance stopped, the pod went away, the API dropped it
            logger.debug("the log stream of {}/{} ended: {}", self.namespace, name, exc)
        finally:
            if res is not None:
                with contextlib.suppress(Exception):
                    res.close()
            put((name, None, 0, b""))

    def _put(self, item: Any) -> None:
        loop, queue = self._loop, self._queue
        if loop is not None and queue is not None:
            with self._handed_lock:
                self._handed += 1
            with contextlib.suppress(RuntimeError):  # the loop has closed: Guard is stopping
                loop.call_soon_threadsafe(self._arrive, queue, item)

    def _arrive(self, queue: Any, item: Any) -> None:
        self._arrived += 1  # on the event loop only
        queue.put_nowait(item)

    def _wait_for_room(self) -> None:
        """Hold the stream while the counting is behind (the server's side then waits in TCP):
        a stream that never ends holds about ``BACKLOG`` lines, not all it sends. Lines handed
        over are those on their way to the queue and those in it."""
        while (queue := self._queue) is not None and self._loop is not None:
            if self._handed - self._arrived + queue.qsize() <= BACKLOG:
                return
            time.sleep(0.02)


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
