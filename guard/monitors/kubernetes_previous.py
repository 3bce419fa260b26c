"""The last lines a crashed container wrote, attached to the signal that reports the crash.

When a pod's container crash-loops or is OOM-killed, the lines that explain why are in the
instance that died: ``GET .../pods/{pod}/log?previous=true&tailLines=N`` (``previous_tail``).
They are fetched once per dead instance (its ``containerID`` in ``lastState.terminated``; a
container killed and not restarted: its own instance), kept for the next signals about it, and
put in the signal's details: ``evidence`` (the text, which ``incidents show`` prints) and
``previous_logs`` (which container and instance, how many lines, the text again for the
diagnosis and the model's ``recent_logs``). The text is redacted and bounded
(``guard.k8s.evidence.log_text``): 256 KiB asked for (``limitBytes``) and read, 2,000
characters a line, 16 KiB in all.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from guard.domain.exceptions import KubernetesError
from guard.domain.records import Signal
from guard.k8s.evidence import log_text

KINDS = {"k8s_crash_loop_back_off", "k8s_oom_killed", "k8s_container_error"}
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
            data = kube.tail_log(self.namespace, name, container, self.tail, previous=previous)
        except KubernetesError as exc:
            found: dict[str, Any] = {"previous_logs": {**about, "error": str(exc)[:500]}}
        else:
            text, count = log_text(data)
            found = {"previous_logs": {**about, "lines": count, "text": text}}
            if text:
                found["evidence"] = text
        self._seen[cid] = found
        if len(self._seen) > REMEMBERED:
            self._seen.popitem(last=False)
        return found
