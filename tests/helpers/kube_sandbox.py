"""The fake cluster the ``kubernetes`` sandbox backend runs against: the fake API server
(tests/fakes/kube.py) with its kubelet (tests/fakes/kube_pods.py) on the local Docker engine."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from guard.config import KubernetesSettings
from guard.sandbox.kube_spec import label_value
from guard.sandbox.owners import LABEL_INCIDENT
from tests.fakes.kube import KubeServer, serve_kube
from tests.fakes.kube_pods import Kubelet
from tests.helpers.sandbox import TEST_PREFIX

NAMESPACE = (
    "guard-sandbox"  # sandbox.namespace (deploy/kubernetes/sandbox.yaml); the context says "shop"
)


@dataclass
class Cluster:
    server: KubeServer
    kubelet: Kubelet
    settings: KubernetesSettings  # the ``kubernetes:`` section pointing at the server

    def leftovers(self, incident_id: str) -> list[str]:
        """The incident's pods, secrets and containers still there."""
        wanted = label_value(incident_id)
        with self.server.state.cond:
            pods = [
                f"pod/{name}"
                for (_, name), p in self.server.state.pods.items()
                if p["metadata"].get("labels", {}).get(LABEL_INCIDENT) == wanted
            ]
        secrets = [
            f"secret/{name}"
            for (_, name), s in list(self.kubelet.secrets.items())
            if s["metadata"].get("labels", {}).get(LABEL_INCIDENT) == wanted
        ]
        found = self.kubelet.client.api.containers(
            all=True, filters={"label": f"guard-test-kubelet={TEST_PREFIX}"}
        )
        containers = [
            f"container/{c['Id'][:12]}"
            for c in found
            if any(wanted.lower()[:30] in n for n in c.get("Names") or [])
        ]
        return pods + secrets + containers


@contextlib.contextmanager
def fake_cluster(client: Any, folder: Path) -> Iterator[Cluster]:
    """A running fake cluster; afterwards every request must be one deploy/ RBAC allows."""
    serving = serve_kube()
    server = next(serving)
    kubelet = Kubelet(server, client, TEST_PREFIX)
    try:
        yield Cluster(server, kubelet, KubernetesSettings(kubeconfig=server.kubeconfig(folder)))
    finally:
        kubelet.close()
        next(serving, None)
