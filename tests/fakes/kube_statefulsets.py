"""StatefulSets on the fake API server (tests/fakes/kube.py): ``GET /apis/apps/v1/namespaces/
{ns}/statefulsets/{name}`` and its ``/scale`` subresource (PATCH with a merge patch, as
``kubectl scale statefulset`` sends; other content types are refused with 415), answering
``Status`` objects for what is not there, as the real server does."""

from __future__ import annotations

import copy
from typing import Any

from tests.fakes.kube import deployment

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


def statefulset(name: str = "db", namespace: str = "shop", replicas: int = 1) -> dict[str, Any]:
    """A StatefulSet: a deployment's shape with its own kind and a governing service."""
    obj = deployment(name, namespace, f"shop/{name}:1", replicas)
    obj["kind"] = "StatefulSet"
    obj["metadata"]["resourceVersion"] = "1"
    del obj["spec"]["strategy"]  # a StatefulSet has updateStrategy, and a governing service
    obj["spec"]["serviceName"] = name
    return obj


def add_statefulset(state: Any, obj: dict[str, Any]) -> dict[str, Any]:
    with state.cond:
        state.statefulsets[(obj["metadata"]["namespace"], obj["metadata"]["name"])] = obj
    return obj


def statefulset_route(
    server: Any, h: Any, method: str, ns: str, name: str, scale: bool, body: Any
) -> None:
    st = server.state
    ctype = (h.headers.get("Content-Type") or "").split(";")[0]
    refused = method == "PATCH" and not (scale and ctype in (MERGE, STRATEGIC))
    with st.cond:
        found = st.statefulsets.get((ns, name))
        answer = copy.deepcopy(found)
        if found is not None and method == "PATCH" and not refused:
            found["spec"]["replicas"] = int(body["spec"]["replicas"])
            found["metadata"]["generation"] += 1
            st._bump(found)
            answer = copy.deepcopy(found)
    if answer is None:
        message = f'statefulsets.apps "{name}" not found'
        return h.reply(
            404, {"kind": "Status", "code": 404, "reason": "NotFound", "message": message}
        )
    if refused:
        return h.reply(415, {"kind": "Status", "code": 415, "message": ctype})
    if not scale:
        return h.reply(200, answer)
    replicas = answer["spec"]["replicas"]
    selector = f"app={name}"
    return h.reply(
        200,
        {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas},
            "status": {"replicas": answer["status"]["replicas"], "selector": selector},
        },
    )
