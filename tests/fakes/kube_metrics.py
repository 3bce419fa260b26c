"""The metrics API of the fake API server (``metrics.k8s.io/v1beta1``, what metrics-server
serves): ``GET /apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods[?labelSelector=]`` lists a
``PodMetricsList`` with each container's ``usage`` (``cpu`` in cores or ``m``/``n``, ``memory``
in ``Ki``/``Mi``). ``KubeState.metrics`` is None until a test calls ``put_usage``: a cluster
without metrics-server, which answers 404 as the real aggregator does."""

from __future__ import annotations

import copy
from typing import Any

from tests.fakes.kube import KubeState, now, selects
from tests.fakes.kube_routes import status


def put_usage(state: KubeState, namespace: str, pod: str, container: str, **usage: str) -> None:
    """Set a container's usage (``cpu="250m"``, ``memory="40Mi"``); serves the metrics API."""
    with state.cond:
        if state.metrics is None:
            state.metrics = {}
        state.metrics.setdefault((namespace, pod), {})[container] = dict(usage)


def metrics_route(server: Any, h: Any, namespace: str, query: dict[str, str]) -> None:
    st: KubeState = server.state
    with st.cond:
        if st.metrics is None:
            message = "the server could not find the requested resource"
            return h.reply(404, status(404, "NotFound", message))
        items = []
        for (ns, name), containers in st.metrics.items():
            pod = st.pods.get((ns, name))
            if ns != namespace or pod is None:
                continue
            if not selects(query.get("labelSelector"), pod["metadata"]["labels"]):
                continue
            items.append(
                {
                    "metadata": {
                        "name": name,
                        "namespace": ns,
                        "labels": pod["metadata"]["labels"],
                    },
                    "timestamp": now(),
                    "window": "15s",
                    "containers": [
                        {"name": c, "usage": copy.deepcopy(u)} for c, u in containers.items()
                    ],
                }
            )
        listing = {"kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1"}
        return h.reply(200, {**listing, "metadata": {}, "items": items})
