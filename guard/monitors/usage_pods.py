"""Readings of Kubernetes pods: the metrics API where it is served, else container status.

One pod list (limits, restart counts) and one ``metrics.k8s.io/v1beta1`` pod-metrics list per
check, whatever the number of pods. Each container is a target (``namespace/pod/container``):
its memory against its limit, its CPU as a share of one core (``250m`` is 25 %), and its
restart count. A cluster without metrics-server answers the metrics list 404: then only the
restart counts are read (container status), and the monitor says so once in its facts
(``metrics: absent``) rather than failing. Tested in tests/monitors/test_resources_pods.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from guard.domain.exceptions import KubernetesError
from guard.monitors.usage import Reading, Sample


class PodUsage:
    """The selected pods' containers, through the same cluster access as the kubernetes monitor."""

    def __init__(self, kube: Any, namespace: str, selector: str | None) -> None:
        self._kube = kube
        self.namespace = namespace
        self.selector = selector

    def sample(self) -> list[Sample]:
        pods = self._kube.list_pods(self.namespace, self.selector).get("items", [])
        usage = self._metrics()
        samples = []
        for pod in pods:
            name = pod["metadata"]["name"]
            limits = {c["name"]: _limits(c) for c in pod.get("spec", {}).get("containers", [])}
            for status in pod.get("status", {}).get("containerStatuses") or []:
                container = status["name"]
                target = f"{self.namespace}/{name}/{container}"
                sample = Sample(target, facts={"pod": name, "container": container})
                sample.readings["restarts"] = Reading(status.get("restartCount", 0), 0, "restarts")
                used = None if usage is None else usage.get((name, container))
                if usage is None:
                    sample.facts["metrics"] = "absent"
                elif used is not None:
                    _add_usage(sample, used, limits.get(container, {}))
                samples.append(sample)
        return samples

    def _metrics(self) -> dict[tuple[str, str], Mapping[str, str]] | None:
        """(pod, container) -> usage; None where the metrics API is not served."""
        try:
            listed = self._kube.list_pod_metrics(self.namespace, self.selector)
        except KubernetesError as exc:
            if exc.status in (404, 503):  # no metrics-server (or it is not ready)
                return None
            raise
        return {
            (item["metadata"]["name"], c["name"]): c.get("usage", {})
            for item in listed.get("items", [])
            for c in item.get("containers", [])
        }


def _limits(container: Mapping[str, Any]) -> Mapping[str, str]:
    return dict((container.get("resources") or {}).get("limits") or {})


def quantity(text: str) -> float:
    """A Kubernetes quantity (``40Mi``, ``250m``, ``123456n``) as a number."""
    from kubernetes.utils import parse_quantity

    return float(parse_quantity(text))  # type: ignore[no-untyped-call]


def _add_usage(sample: Sample, used: Mapping[str, str], limits: Mapping[str, str]) -> None:
    if "memory" in used:
        limit = quantity(limits["memory"]) if "memory" in limits else 0.0
        sample.readings["memory"] = Reading(quantity(used["memory"]), limit, "B")
        if not limit:
            sample.facts["memory_limit"] = "none"
    if "cpu" in used:
        cores = quantity(used["cpu"])
        limit = quantity(limits["cpu"]) * 100 if "cpu" in limits else 0.0
        sample.readings["cpu"] = Reading(cores * 100, limit, "%")
