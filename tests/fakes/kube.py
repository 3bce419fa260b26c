"""A local stand-in for the Kubernetes API server, speaking the REST paths Guard's client uses.

Objects have the real shapes (``kind``, ``metadata.resourceVersion``, ``status.containerStatuses``
...). One resourceVersion counter orders every change, as etcd's revision does. Watches stream
newline-delimited JSON events over chunked HTTP/1.1, from the requested resourceVersion on; a
resourceVersion older than the retained history gets an ``ERROR`` event carrying a 410 ``Status``
(``reason: Expired``), exactly like the real API server. Tests can make the next watch drop its
connection mid-stream (no terminating chunk), answer HTTP 410, or expire the history. A tiny
deployment controller keeps ReplicaSets and revisions consistent so ``rollout undo`` can be
checked. Leases (``coordination.k8s.io/v1``) are created, read and replaced with the API
server's optimistic concurrency: a PUT whose ``resourceVersion`` is stale gets 409 ``Conflict``.
Every request is recorded (method, path, query, content type, body).
"""

from __future__ import annotations

import contextlib
import copy
import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

from tests.fakes.local_http import KeptAlive

REVISION = "deployment.kubernetes.io/revision"


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def selects(selector: str | None, labels: dict[str, str]) -> bool:
    for term in filter(None, (selector or "").split(",")):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k.strip()) == v.strip():
                return False
        elif "=" in term:
            k, v = term.replace("==", "=").split("=", 1)
            if labels.get(k.strip()) != v.strip():
                return False
        elif term.strip() not in labels:
            return False
    return True


def container_status(
    name: str = "app",
    *,
    waiting: str | None = None,
    terminated: str | None = None,
    last_terminated: str | None = None,
    exit_code: int = 1,
    restarts: int = 0,
) -> dict[str, Any]:
    state: dict[str, Any] = {"running": {"startedAt": now()}}
    if waiting:
        state = {"waiting": {"reason": waiting, "message": f"{waiting} for container {name}"}}
    elif terminated:
        state = {
            "terminated": {
                "reason": terminated,
                "exitCode": exit_code,
                "startedAt": now(),
                "finishedAt": now(),
            }
        }
    last: dict[str, Any] = {}
    if last_terminated:
        last = {
            "terminated": {
                "reason": last_terminated,
                "exitCode": exit_code,
                "startedAt": now(),
                "finishedAt": now(),
                "containerID": f"containerd://{uuid.uuid4().hex}",
            }
        }
    return {
        "name": name,
        "image": "registry.example/shop/api:1.4.2",
        "imageID": "",
        "ready": not (waiting or terminated),
        "restartCount": restarts,
        "started": not (waiting or terminated),
        "state": state,
        "lastState": last,
    }


def pod(
    name: str,
    *,
    app: str = "api",
    rs: str | None = None,
    phase: str = "Running",
    ready: bool = True,
    statuses: list[dict[str, Any]] | None = None,
    not_ready_since: str | None = None,
    namespace: str = "shop",
) -> dict[str, Any]:
    """A Pod as the API server returns it (owned by ReplicaSet ``rs``)."""
    rs = rs or f"{app}-7d9f8b6c5d"
    hash_ = rs.rsplit("-", 1)[-1]
    statuses = statuses if statuses is not None else [container_status()]
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": str(uuid.uuid4()),
            "labels": {"app": app, "pod-template-hash": hash_},
            "creationTimestamp": now(),
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": rs,
                    "uid": str(uuid.uuid4()),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "containers": [{"name": s["name"], "image": s["image"]} for s in statuses],
            "nodeName": "node-1",
            "restartPolicy": "Always",
        },
        "status": {
            "phase": phase,
            "podIP": "10.1.2.3",
            "startTime": now(),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "lastTransitionTime": not_ready_since or now(),
                }
            ],
            "containerStatuses": statuses,
        },
    }


def deployment(
    name: str = "api", namespace: str = "shop", image: str = "shop/api:1.4.2", replicas: int = 2
) -> dict[str, Any]:
    return {
        "kind": "Deployment",
        "apiVersion": "apps/v1",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": str(uuid.uuid4()),
            "generation": 1,
            "labels": {"app": name},
            "annotations": {},
            "creationTimestamp": now(),
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": image}]},
            },
            "strategy": {"type": "RollingUpdate"},
        },
        "status": {"replicas": replicas, "readyReplicas": replicas},
    }


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    content_type: str | None
    body: Any


def merge(target: dict[str, Any], patch: dict[str, Any]) -> None:
    """Merge-patch semantics (strategic merge is the same for the map fields Guard patches)."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


class KubeState:
    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.rv = 100
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self.history: list[tuple[int, str, dict[str, Any]]] = []  # pod watch events
        self.compacted = 0  # watch from a resourceVersion below this: 410 Expired
        self.events: list[dict[str, Any]] = []
        self.deployments: dict[tuple[str, str], dict[str, Any]] = {}
        self.replicasets: dict[tuple[str, str], dict[str, Any]] = {}
        self.statefulsets: dict[tuple[str, str], dict[str, Any]] = {}  # kube_statefulsets.py
        self.leases: dict[tuple[str, str], dict[str, Any]] = {}  # coordination.k8s.io/v1
        self.metrics: dict[tuple[str, str], dict[str, dict[str, str]]] | None = None  # kube_metrics
        self.stopping = False

    def _bump(self, obj: dict[str, Any]) -> None:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)

    def put_pod(self, obj: dict[str, Any]) -> dict[str, Any]:
        with self.cond:
            key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
            kind = "MODIFIED" if key in self.pods else "ADDED"
            obj = copy.deepcopy(obj)
            if key in self.pods:  # the same pod changing: its identity stays
                obj["metadata"]["uid"] = self.pods[key]["metadata"]["uid"]
            self._bump(obj)
            self.pods[key] = obj
            self.history.append((self.rv, kind, copy.deepcopy(obj)))
            self.cond.notify_all()
            return obj

    def delete_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        with self.cond:
            obj = self.pods.pop((namespace, name), None)
            if obj is not None:
                obj["metadata"]["deletionTimestamp"] = now()
                self._bump(obj)
                self.history.append((self.rv, "DELETED", copy.deepcopy(obj)))
                self.cond.notify_all()
            return obj

    def expire_history(self) -> None:
        """Forget every watch event so far, as etcd compaction does."""
        with self.cond:
            self.compacted = self.rv + 1
            self.history.clear()

    def warning(
        self, pod_name: str, reason: str, message: str, namespace: str = "shop", count: int = 1
    ) -> dict[str, Any]:
        with self.cond:
            self.rv += 1
            ev = {
                "kind": "Event",
                "apiVersion": "v1",
                "type": "Warning",
                "reason": reason,
                "message": message,
                "count": count,
                "metadata": {
                    "name": f"{pod_name}.{uuid.uuid4().hex[:16]}",
                    "namespace": namespace,
                    "uid": str(uuid.uuid4()),
                    "resourceVersion": str(self.rv),
                },
                "involvedObject": {
                    "kind": "Pod",
                    "name": pod_name,
                    "namespace": namespace,
                    "apiVersion": "v1",
                },
                "firstTimestamp": now(),
                "lastTimestamp": now(),
                "source": {"component": "kubelet", "host": "node-1"},
            }
            self.events.append(ev)
            return ev

    def add_deployment(self, obj: dict[str, Any]) -> dict[str, Any]:
        with self.cond:
            self._bump(obj)
            self.deployments[(obj["metadata"]["namespace"], obj["metadata"]["name"])] = obj
            self._reconcile(obj)
            return obj

    def _reconcile(self, dep: dict[str, Any]) -> None:
        """The deployment controller, reduced to what revisions need: one ReplicaSet per
        distinct template; the current template's ReplicaSet gets the newest revision."""
        ns, name = dep["metadata"]["namespace"], dep["metadata"]["name"]
        mine = [
            rs
            for (n, _), rs in self.replicasets.items()
            if n == ns and rs["metadata"]["ownerReferences"][0]["uid"] == dep["metadata"]["uid"]
        ]
        top = max((int(rs["metadata"]["annotations"][REVISION]) for rs in mine), default=0)
        template = copy.deepcopy(dep["spec"]["template"])
        for rs in mine:
            t = copy.deepcopy(rs["spec"]["template"])
            t["metadata"]["labels"].pop("pod-template-hash", None)
            if t == template:
                if int(rs["metadata"]["annotations"][REVISION]) != top:
                    rs["metadata"]["annotations"][REVISION] = str(top + 1)
                    top += 1
                break
        else:
            hash_ = uuid.uuid4().hex[:10]
            template["metadata"]["labels"]["pod-template-hash"] = hash_
            rs = {
                "kind": "ReplicaSet",
                "apiVersion": "apps/v1",
                "metadata": {
                    "name": f"{name}-{hash_}",
                    "namespace": ns,
                    "uid": str(uuid.uuid4()),
                    "labels": dict(template["metadata"]["labels"]),
                    "annotations": {REVISION: str(top + 1)},
                    "ownerReferences": [
                        {
                            "apiVersion": "apps/v1",
                            "kind": "Deployment",
                            "name": name,
                            "uid": dep["metadata"]["uid"],
                            "controller": True,
                        }
                    ],
                },
                "spec": {
                    "replicas": dep["spec"]["replicas"],
                    "selector": {"matchLabels": dict(template["metadata"]["labels"])},
                    "template": template,
                },
            }
            self._bump(rs)
            self.replicasets[(ns, rs["metadata"]["name"])] = rs
            top += 1
        dep["metadata"]["annotations"][REVISION] = str(top)


class KubeServer:
    def __init__(self) -> None:
        self.state = KubeState()
        self.requests: list[Request] = []
        self.drop_next_watch_after: int | None = None  # events sent before cutting the line
        self.gone_next_watch_http = False  # answer the next watch with HTTP 410
        self.watch_connections = 0
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    def start(self) -> KubeServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        with self.state.cond:
            self.state.stopping = True
            self.state.cond.notify_all()
        self._httpd.shutdown()
        self._httpd.server_close()

    def kubeconfig(self, folder: Path) -> Path:
        """A kubeconfig whose current context points at this server."""
        path = folder / "kubeconfig"
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "local",
                    "clusters": [{"name": "local", "cluster": {"server": self.url}}],
                    "users": [{"name": "guard", "user": {"token": "kube-test-token"}}],
                    "contexts": [
                        {
                            "name": "local",
                            "context": {"cluster": "local", "user": "guard", "namespace": "shop"},
                        }
                    ],
                }
            )
        )
        return path

    def sent(self, method: str, path_part: str = "") -> list[Request]:
        return [r for r in self.requests if r.method == method and path_part in r.path]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        from tests.fakes.kube_routes import route  # the REST surface, beside this module

        server = self

        class Handler(KeptAlive):
            def _serve(self, method: str) -> None:
                url = urlsplit(self.path)
                query = {k: v[-1] for k, v in parse_qs(url.query).items()}
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                server.requests.append(
                    Request(method, url.path, query, self.headers.get("Content-Type"), body)
                )
                with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
                    route(server, self, method, url.path, query, body)

            def do_GET(self) -> None:
                self._serve("GET")

            def do_PATCH(self) -> None:
                self._serve("PATCH")

            def do_POST(self) -> None:
                self._serve("POST")

            def do_PUT(self) -> None:
                self._serve("PUT")

            def do_DELETE(self) -> None:
                self._serve("DELETE")

            def reply(self, status: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def stream_start(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()

            def chunk(self, obj: Any) -> None:
                data = json.dumps(obj).encode() + b"\n"
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def stream_end(self) -> None:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            def cut(self) -> None:
                """Drop the connection mid-stream, like a load balancer timing out."""
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


DEPLOY = Path(__file__).resolve().parents[2] / "deploy/kubernetes"
RBAC = DEPLOY / "rbac.yaml"
HA = DEPLOY / "guard-ha.yaml"  # its Role: the leader election's Lease


def granted_by_rbac() -> set[tuple[str, str, str]]:
    docs = [d for path in (RBAC, HA) for d in yaml.safe_load_all(path.read_text())]
    return {
        (group, res, verb)
        for d in docs
        if d["kind"] in ("ClusterRole", "Role")
        for rule in d["rules"]
        for group in rule["apiGroups"]
        for res in rule["resources"]
        for verb in rule["verbs"]
    }


def serve_kube() -> Iterator[KubeServer]:
    """Body of a ``kube`` fixture. Afterwards, every request Guard made must be one that
    deploy/kubernetes/rbac.yaml (or guard-ha.yaml's Role) allows, so the documented RBAC cannot
    fall behind the code."""
    from tests.fakes.kube_routes import rbac_need

    server = KubeServer().start()
    yield server
    server.stop()
    time.sleep(0.05)
    needed = {rbac_need(r.method, r.path, r.query) for r in server.requests}
    assert needed <= granted_by_rbac(), needed - granted_by_rbac()
