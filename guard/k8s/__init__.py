"""Kubernetes through the official client: configuration, raw-JSON calls, pod classification.

The client (and the ``kubernetes`` package, ~10 MB) loads on first use, not with the package:
``guard.k8s.evidence`` and ``guard.k8s.pods`` are read by every ``guard run`` (the agent's tools,
the diagnosis), most of which never talk to a cluster.
"""

from typing import Any

from guard.domain.exceptions import KubernetesError

__all__ = ["KubeClient", "KubernetesError", "WatchExpired", "load_configuration", "pod_namespace"]


def __getattr__(name: str) -> Any:
    if name in ("KubeClient", "WatchExpired", "load_configuration", "pod_namespace"):
        from guard.k8s import client

        return getattr(client, name)
    raise AttributeError(f"module 'guard.k8s' has no attribute {name!r}")
