"""Kubernetes through the official client: configuration, raw-JSON calls, pod classification."""

from guard.exceptions import KubernetesError
from guard.k8s.client import KubeClient, WatchExpired, load_configuration, pod_namespace

__all__ = ["KubeClient", "KubernetesError", "WatchExpired", "load_configuration", "pod_namespace"]
