"""The last lines a crashed container wrote, attached to the signal that reports the crash.

When a pod's container crash-loops or is OOM-killed, the lines that explain why are in the
instance that died: ``GET .../pods/{pod}/log?previous=true&tailLines=N`` (``previous_tail``).
They are fetched once per dead instance (its ``containerID`` in ``lastState.terminated``; a
container killed and not restarted: its own instance), kept for the next signals about it, and
put in the signal's details: ``evidence`` (the text, which ``incidents show`` prints) and
``previous_logs`` (which container and instance, how many lines, the text again for the
diagnosis and the model's ``recent_logs``). The text is redacted and bounded: ``READ_LIMIT``
bytes asked for (``limitBytes``) and read, ``LINE_CHARS`` per line, ``TEXT_CHARS`` in all.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import urllib3

from guard.exceptions import KubernetesError
from guard.monitors.kubernetes_logs import parse_stamp
from guard.records import Signal
from guard.redact import redact

KINDS = {"k8s_crash_loop_back_off", "k8s_oom_killed", "k8s_container_error"}
READ_LIMIT = 256 * 1024
LINE_CHARS = 2000
TEXT_CHARS = 16 * 1024
REMEMBERED = 256  # dead instances whose lines are kept


def _instance(pod: Mapping[str, Any], container: str) -> tuple[str, bool] | None:
    """``(containerID, previous)`` of the instance that died, if there is one."""
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        if cs.get("name") != container:
            continue
        last = (cs.get("lastState") or {}).get("terminated") or {}
        if last.get("containerID"):
            return str(last["containerID"]), True
        now = (cs.get("state") or {}).get("terminated") or {}
        if now.get("containerID"):
            return str(now["containerID"]), False
    return None


def _text(data: bytes) -> tuple[str, int]:
    """The lines without their timestamps, each and all bounded, redacted; and how many."""
    lines = []
    for raw in data.split(b"\n"):
        stamp, _, rest = raw.partition(b" ")
        with contextlib.suppress(ValueError, OverflowError):
            parse_stamp(stamp)
            raw = rest
        lines.append(raw.rstrip(b"\r").decode("utf-8", "replace")[:LINE_CHARS])
    while lines and not lines[-1]:
        lines.pop()
    text = "\n".join(lines)
    if len(text) > TEXT_CHARS:  # the last lines matter most
        text = text[-TEXT_CHARS:].partition("\n")[2]
    return redact(text), len(text.splitlines())


class PreviousLines:
    """Fetches and remembers the last lines of dead container instances."""

    def __init__(self, namespace: str, tail: int) -> None:
        self.namespace, self.tail = namespace, tail
        self._seen: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()  # the poll and the watch may both see one crash

    def add_to(
        self, kube: Any, signals: list[Signal], pods: Mapping[str, Mapping[str, Any]]
    ) -> list[Signal]:
        """``signals`` with the dead instance's lines in the details of each crash signal.
        Blocking: run it in a worker thread."""
        if self.tail == 0:
            return signals
        out = []
        for sig in signals:
            pod = pods.get(str(sig.details.get("pod")))
            found = None
            if sig.kind in KINDS and pod is not None and "container" in sig.details:
                with self._lock:
                    found = self._lines(kube, pod, str(sig.details["container"]))
            out.append(sig if found is None else replace(sig, details={**sig.details, **found}))
        return out

    def _lines(self, kube: Any, pod: Mapping[str, Any], container: str) -> dict[str, Any] | None:
        instance = _instance(pod, container)
        if instance is None:
            return None
        cid, previous = instance
        if cid in self._seen:
            self._seen.move_to_end(cid)
            return self._seen[cid]
        name = str(pod["metadata"]["name"])
        about: dict[str, Any] = {"pod": name, "container": container, "previous": previous}
        try:
            res = kube.pod_log(
                self.namespace,
                name,
                container,
                previous=previous,
                tail_lines=self.tail,
                limit_bytes=READ_LIMIT,
            )
            try:
                data = res.read(READ_LIMIT)
            finally:
                res.close()  # what is left unread (a server ignoring limitBytes) is dropped
        except (KubernetesError, OSError, ValueError, urllib3.exceptions.HTTPError) as exc:
            found: dict[str, Any] = {"previous_logs": {**about, "error": str(exc)[:500]}}
        else:
            text, count = _text(data)
            found = {"previous_logs": {**about, "lines": count, "text": text}}
            if text:
                found["evidence"] = text
        self._seen[cid] = found
        if len(self._seen) > REMEMBERED:
            self._seen.popitem(last=False)
        return found
