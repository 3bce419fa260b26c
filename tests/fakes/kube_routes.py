"""The REST surface of the fake API server (tests/fakes/kube.py): lists, watches, patches.

Paths and answers follow the Kubernetes API: ``/api/v1/namespaces/{ns}/pods`` (list, or watch
with ``?watch=true&resourceVersion=``), ``.../pods/{name}`` (DELETE), ``.../pods/{name}/log`` (tests/fakes/kube_logs.py), ``.../events``,
``/apis/apps/v1/namespaces/{ns}/deployments/{name}`` (GET, PATCH with strategic-merge or JSON
patch), ``.../deployments/{name}/scale``, ``.../replicasets`` and
``/apis/coordination.k8s.io/v1/namespaces/{ns}/leases[/{name}]`` (POST; GET, PUT). Errors are
``Status`` objects. With a kubelet attached (tests/fakes/kube_pods.py), pods are admitted and
really run, and Secrets, NetworkPolicies and injected faults are served first.
"""

from __future__ import annotations

import copy
import re
import time
import uuid
from typing import Any

from tests.fakes.kube import REVISION, merge, now, selects
from tests.fakes.kube_statefulsets import statefulset_route

STRATEGIC = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


def status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def listing(kind: str, rv: int, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "kind": kind,
        "apiVersion": "v1",
        "metadata": {"resourceVersion": str(rv)},
        "items": items,
    }


def route(server: Any, h: Any, method: str, path: str, query: dict[str, str], body: Any) -> None:
    from tests.fakes.kube_pods import pods_route  # pods that run, secrets, policies, faults

    if pods_route(server, h, method, path, query, body):
        return None
    st = server.state
    if m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods", path):
        ns = m.group(1)
        if query.get("watch") in ("true", "1"):
            return watch(server, h, ns, query)
        with st.cond:
            items = [
                copy.deepcopy(p)
                for (n, _), p in st.pods.items()
                if n == ns and selects(query.get("labelSelector"), p["metadata"]["labels"])
            ]
            return h.reply(200, listing("PodList", st.rv, items))
    if (
        m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)/log", path)
    ) and method == "GET":
        from tests.fakes.kube_logs import log_route

        return log_route(server, h, m.group(1), m.group(2), query)
    m = re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)", path)
    if m and method == "DELETE":
        obj = st.delete_pod(m.group(1), m.group(2))
        if obj is None:
            return h.reply(404, status(404, "NotFound", f'pods "{m.group(2)}" not found'))
        return h.reply(200, obj)
    if m := re.fullmatch(r"/apis/metrics.k8s.io/v1beta1/namespaces/([^/]+)/pods", path):
        from tests.fakes.kube_metrics import metrics_route

        return metrics_route(server, h, m.group(1), query)
    if m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/events", path):
        wanted = query.get("fieldSelector", "")
        with st.cond:
            items = [
                e
                for e in st.events
                if e["metadata"]["namespace"] == m.group(1)
                and (wanted != "type=Warning" or e["type"] == "Warning")
            ]
            return h.reply(200, listing("EventList", st.rv, copy.deepcopy(items)))
    if m := re.fullmatch(r"/apis/apps/v1/namespaces/([^/]+)/deployments/([^/]+)(/scale)?", path):
        return deployment_route(server, h, method, m.group(1), m.group(2), bool(m.group(3)), body)
    if m := re.fullmatch(r"/apis/apps/v1/namespaces/([^/]+)/statefulsets/([^/]+)(/scale)?", path):
        return statefulset_route(server, h, method, m.group(1), m.group(2), bool(m.group(3)), body)
    if m := re.fullmatch(r"/apis/apps/v1/namespaces/([^/]+)/replicasets", path):
        with st.cond:
            items = [
                copy.deepcopy(rs)
                for (n, _), rs in st.replicasets.items()
                if n == m.group(1) and selects(query.get("labelSelector"), rs["metadata"]["labels"])
            ]
            return h.reply(200, listing("ReplicaSetList", st.rv, items))
    if m := re.fullmatch(
        r"/apis/coordination\.k8s\.io/v1/namespaces/([^/]+)/leases(?:/([^/]+))?", path
    ):
        return lease_route(server, h, method, m.group(1), m.group(2), body)
    return h.reply(404, status(404, "NotFound", f"the server could not find {path}"))


def lease_route(server: Any, h: Any, method: str, ns: str, name: str | None, body: Any) -> None:
    """Leases as the API server keeps them: a create that exists is 409 ``AlreadyExists``, an
    update whose ``metadata.resourceVersion`` is not the current one is 409 ``Conflict``."""
    st = server.state
    what = f'leases.coordination.k8s.io "{name or (body or {}).get("metadata", {}).get("name")}"'
    with st.cond:
        if method == "POST" and name is None:
            key = (ns, body["metadata"]["name"])
            if bad := invalid_times(body):
                return h.reply(400, status(400, "BadRequest", bad))
            if key in st.leases:
                return h.reply(409, status(409, "AlreadyExists", f"{what} already exists"))
            obj = copy.deepcopy(body)
            obj["metadata"].update(namespace=ns, uid=str(uuid.uuid4()), creationTimestamp=now())
            st._bump(obj)
            st.leases[key] = obj
            return h.reply(201, copy.deepcopy(obj))
        current = st.leases.get((ns, name or ""))
        if name is None or method not in ("GET", "PUT"):
            return h.reply(405, status(405, "MethodNotAllowed", f"{method} {what}"))
        if current is None:
            return h.reply(404, status(404, "NotFound", f"{what} not found"))
        if method == "GET":
            return h.reply(200, copy.deepcopy(current))
        if body["metadata"].get("name") != name:
            return h.reply(400, status(400, "BadRequest", "the name of the object does not match"))
        if bad := invalid_times(body):
            return h.reply(400, status(400, "BadRequest", bad))
        version = body["metadata"].get("resourceVersion")
        if version and version != current["metadata"]["resourceVersion"]:
            return h.reply(
                409,
                status(
                    409,
                    "Conflict",
                    f"Operation cannot be fulfilled on {what}: the object has been modified; "
                    "please apply your changes to the latest version and try again",
                ),
            )
        obj = copy.deepcopy(body)
        obj["metadata"].update(
            namespace=ns,
            uid=current["metadata"]["uid"],
            creationTimestamp=current["metadata"]["creationTimestamp"],
        )
        st._bump(obj)
        st.leases[(ns, name)] = obj
        return h.reply(200, copy.deepcopy(obj))


MICRO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)")


def invalid_times(lease: dict[str, Any]) -> str | None:
    """The API server's MicroTime parse (Go's RFC3339Micro: six fractional digits)."""
    for field in ("acquireTime", "renewTime"):
        value = (lease.get("spec") or {}).get(field)
        if value is not None and not MICRO_TIME.fullmatch(str(value)):
            return f'Lease in version "v1" cannot be handled as a Lease: {field}: {value!r}'
    return None


def watch(server: Any, h: Any, ns: str, query: dict[str, str]) -> None:
    st = server.state
    server.watch_connections += 1
    if server.gone_next_watch_http:
        server.gone_next_watch_http = False
        return h.reply(410, status(410, "Gone", "too old resource version"))
    since = int(query.get("resourceVersion") or 0)
    deadline = time.monotonic() + float(query.get("timeoutSeconds") or 30)
    drop_after, server.drop_next_watch_after = server.drop_next_watch_after, None
    h.stream_start()
    if since and since < st.compacted:
        h.chunk(
            {
                "type": "ERROR",
                "object": status(
                    410, "Expired", f"too old resource version: {since} ({st.compacted})"
                ),
            }
        )
        return h.stream_end()
    sent = 0
    while time.monotonic() < deadline:
        with st.cond:
            if st.stopping:
                break
            pending = [
                (rv, kind, obj)
                for rv, kind, obj in st.history
                if rv > since
                and obj["metadata"]["namespace"] == ns
                and selects(query.get("labelSelector"), obj["metadata"]["labels"])
            ]
            if not pending:
                st.cond.wait(0.05)
                continue
        for rv, kind, obj in pending:
            if drop_after is not None and sent >= drop_after:
                return h.cut()
            h.chunk({"type": kind, "object": obj})
            since, sent = rv, sent + 1
    return h.stream_end()


def deployment_route(
    server: Any, h: Any, method: str, ns: str, name: str, scale: bool, body: Any
) -> None:
    st = server.state
    with st.cond:
        dep = st.deployments.get((ns, name))
        if dep is None:
            return h.reply(404, status(404, "NotFound", f'deployments.apps "{name}" not found'))
        if method == "PATCH":
            ctype = (h.headers.get("Content-Type") or "").split(";")[0]
            if scale:
                if ctype not in (MERGE, STRATEGIC):
                    return h.reply(415, status(415, "UnsupportedMediaType", ctype))
                dep["spec"]["replicas"] = int(body["spec"]["replicas"])
            elif ctype in (STRATEGIC, MERGE):
                merge(dep, body)
            elif ctype == JSON_PATCH:
                for op in body:
                    assert op["op"] == "replace", op
                    *parents, last = op["path"].strip("/").split("/")
                    node = dep
                    for p in parents:
                        node = node[p]
                    node[last] = copy.deepcopy(op["value"])
            else:
                return h.reply(415, status(415, "UnsupportedMediaType", ctype))
            dep["metadata"]["generation"] += 1
            st._bump(dep)
            st._reconcile(dep)
        if scale:
            return h.reply(
                200,
                {
                    "kind": "Scale",
                    "apiVersion": "autoscaling/v1",
                    "metadata": {
                        "name": name,
                        "namespace": ns,
                        "resourceVersion": dep["metadata"]["resourceVersion"],
                    },
                    "spec": {"replicas": dep["spec"]["replicas"]},
                    "status": {"replicas": dep["spec"]["replicas"], "selector": f"app={name}"},
                },
            )
        return h.reply(200, copy.deepcopy(dep))


__all__ = ["JSON_PATCH", "MERGE", "REVISION", "STRATEGIC", "route"]


def rbac_need(method: str, path: str, query: dict[str, str]) -> tuple[str, str, str]:
    """The (apiGroup, resource, verb) RBAC checks for one request, as the API server derives it."""
    parts = path.strip("/").split("/")
    group = "" if parts[0] == "api" else parts[1]
    rest = parts[2:] if parts[0] == "api" else parts[3:]
    # rest: namespaces/{ns}/{resource}[/{name}[/{subresource}]]
    resource, named = rest[2], len(rest) > 3
    if len(rest) > 4:
        resource = f"{resource}/{rest[4]}"
    verb = {"PATCH": "patch", "DELETE": "delete", "POST": "create", "PUT": "update"}.get(method)
    if verb is None:
        verb = "watch" if query.get("watch") in ("true", "1") else ("get" if named else "list")
    return group, resource, verb
