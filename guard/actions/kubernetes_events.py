"""``k8s.events POD``: the Warning events of a pod (and of its siblings), as evidence.

A pod in CrashLoopBackOff or ImagePullBackOff says why in its events (``Failed to pull image
"shop/api:1.5.0": not found``, ``Back-off restarting failed container``) before any log line
exists; the human asked to roll a deployment back should read them first. One list of the
namespace's Warning events, those about the pod or, with ``prefix=`` (the workload's name),
about any pod of the workload; the newest ``MAX_EVENTS`` kept. Nothing is changed. Tested in
tests/skills/test_starter_kube.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from guard.actions.base import ActionResult
from guard.actions.kubernetes import KubeAction
from guard.k8s.client import KubeClient
from guard.redact import redact

MAX_EVENTS = 20


class Events(KubeAction):
    name = "k8s.events"
    description = "a pod's Warning events, newest last (evidence; changes nothing)"
    params = ("pod", "namespace")
    target = "pod"

    def act(
        self, kube: KubeClient, name: str, namespace: str, args: Mapping[str, Any]
    ) -> ActionResult:
        prefix = str(args.get("prefix") or "")
        items = kube.list_warning_events(namespace).get("items") or []
        about = [
            ev
            for ev in items
            if (obj := str((ev.get("involvedObject") or {}).get("name", ""))) == name
            or (prefix and obj.startswith(f"{prefix}-"))
        ]
        about.sort(key=lambda ev: str(ev.get("lastTimestamp") or ev.get("eventTime") or ""))
        lines = [
            f"{ev.get('lastTimestamp') or ev.get('eventTime') or '?'} "
            f"{(ev.get('involvedObject') or {}).get('name')} {ev.get('reason')} "
            f"x{ev.get('count') or 1}: {ev.get('message', '')}"[:1000]
            for ev in about[-MAX_EVENTS:]
        ]
        shown = redact("\n".join(lines)) or f"(no Warning events about {namespace}/{name})"
        return ActionResult(
            True, shown, {"namespace": namespace, "pod": name, "events": len(about)}
        )


ACTIONS = [Events()]
