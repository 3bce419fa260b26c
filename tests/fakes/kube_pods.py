"""Pods that really run, for the fake API server (tests/fakes/kube.py): admission, a kubelet,
Secrets, NetworkPolicies and injected API faults.

* ``POST .../pods`` is admitted as a namespace enforcing Pod Security ``restricted:latest``
  would: a spec that breaks it gets the real 403 (``pods "x" is forbidden: violates PodSecurity
  "restricted:latest": allowPrivilegeEscalation != false (container "step" must set ...)``).
* The kubelet runs an admitted pod's one container as a Docker container on the local engine:
  the image must be present (else ``ErrImagePull`` then ``ImagePullBackOff``, as with no
  registry), ``command`` is the entrypoint, the securityContext, resources and volumes map onto
  Docker's options (emptyDir: tmpfs; secret: a read-only bind mount of its files; no network:
  sandbox pods sit behind the deny-all policy), ``secretKeyRef`` env is resolved from stored
  Secrets (a missing one: ``CreateContainerConfigError``), ``activeDeadlineSeconds`` ends it
  (``DeadlineExceeded``). Status follows: Pending, Running, then Succeeded or Failed with the
  container's ``terminated`` exit code and reason (``OOMKilled``). The log is Docker's (both
  streams, in order), honouring ``limitBytes``. Deleting the pod removes the container.
* ``faults``: answer the next matching requests with an HTTP status (429, 500) or stall them.
"""

from __future__ import annotations

import contextlib
import copy
import re
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.fakes.kube import now

CHUNK = 65536


@dataclass
class Fault:
    method: str
    path_part: str
    status: int  # 0: stall for ``stall`` seconds, then answer normally
    count: int
    stall: float = 0.0


def restricted_violations(pod: dict[str, Any]) -> list[str]:
    """What Pod Security ``restricted`` finds wrong with ``pod`` (the admission's wording)."""
    spec = pod.get("spec") or {}
    psc = spec.get("securityContext") or {}
    found: list[str] = []
    for c in spec.get("containers") or []:
        sc, name = c.get("securityContext") or {}, c.get("name")
        if sc.get("privileged"):
            found.append(
                f'privileged (container "{name}" must not set securityContext.privileged=true)'
            )
        if sc.get("allowPrivilegeEscalation") is not False:
            found.append(
                f'allowPrivilegeEscalation != false (container "{name}" must set '
                "securityContext.allowPrivilegeEscalation=false)"
            )
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []) or set(caps.get("add") or []) - {
            "NET_BIND_SERVICE"
        }:
            found.append(
                f'unrestricted capabilities (container "{name}" must set '
                'securityContext.capabilities.drop=["ALL"])'
            )
        if sc.get("runAsNonRoot", psc.get("runAsNonRoot")) is not True:
            found.append(
                f'runAsNonRoot != true (pod or container "{name}" must set '
                "securityContext.runAsNonRoot=true)"
            )
        if sc.get("runAsUser", psc.get("runAsUser")) == 0:
            found.append(f'runAsUser=0 (container "{name}" must not set runAsUser=0)')
        seccomp = (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            found.append(
                f'seccompProfile (pod or container "{name}" must set '
                'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'
            )
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key):
            found.append(f"host namespaces ({key}=true)")
    for v in spec.get("volumes") or []:
        if "hostPath" in v:
            found.append(
                f'restricted volume types (volume "{v["name"]}" uses restricted volume type "hostPath")'
            )
    return found


class Kubelet:
    """Runs the fake API server's pods as containers on the local Docker engine."""

    def __init__(self, server: Any, client: Any, prefix: str) -> None:
        self.server, self.client, self.prefix = server, client, prefix
        self.secrets: dict[tuple[str, str], dict[str, Any]] = {}
        self.policies: dict[tuple[str, str], dict[str, Any]] = {}
        self.containers: dict[tuple[str, str], str] = {}
        self.faults: list[Fault] = []
        self.lock = threading.Lock()
        self.dirs: list[tempfile.TemporaryDirectory[str]] = []
        server.kubelet = self

    # -- faults ---------------------------------------------------------------------------------

    def fail(self, status: int, count: int = 1, path_part: str = "", method: str = "") -> None:
        self.faults.append(Fault(method, path_part, status, count))

    def stall(self, seconds: float, count: int = 1, path_part: str = "", method: str = "") -> None:
        self.faults.append(Fault(method, path_part, 0, count, seconds))

    def fault(self, method: str, path: str) -> Fault | None:
        with self.lock:
            for f in self.faults:
                if f.count > 0 and f.path_part in path and f.method in ("", method):
                    f.count -= 1
                    return f
        return None

    # -- objects --------------------------------------------------------------------------------

    def admit(self, ns: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The answer to ``POST .../pods``: 403 from admission, 409, or 201 and a running pod."""
        from tests.fakes.kube_routes import status

        name = body["metadata"]["name"]
        if bad := restricted_violations(body):
            message = f'pods "{name}" is forbidden: violates PodSecurity "restricted:latest": '
            return 403, status(403, "Forbidden", message + ", ".join(bad))
        if (ns, name) in self.server.state.pods:
            return 409, status(409, "AlreadyExists", f'pods "{name}" already exists')
        pod = copy.deepcopy(body)
        pod["metadata"].update(namespace=ns, uid=str(uuid.uuid4()), creationTimestamp=now())
        pod["status"] = {"phase": "Pending", "conditions": []}
        made = self.server.state.put_pod(pod)
        threading.Thread(target=self._run, args=(ns, name), daemon=True).start()
        return 201, made

    def _status(self, ns: str, name: str, status: dict[str, Any]) -> bool:
        st = self.server.state
        with st.cond:
            pod = st.pods.get((ns, name))
            if pod is None:
                return False
            pod = copy.deepcopy(pod)
            pod["status"] = status
            st.put_pod(pod)
            return True

    def _report(self, ns: str, name: str, phase: str, image: str, state: dict[str, Any]) -> None:
        """Set the pod's phase and its one container's state (``waiting``/``running``/...)."""
        running = "running" in state
        extra = {"startTime": state["running"]["startedAt"]} if running else {}
        container = {
            "name": "step",
            "image": image,
            "imageID": "",
            "ready": running,
            "restartCount": 0,
            "started": running,
            "state": state,
            "lastState": {},
        }
        self._status(ns, name, {"phase": phase, **extra, "containerStatuses": [container]})

    def _waiting(self, ns: str, name: str, image: str, reason: str, message: str) -> None:
        self._report(
            ns, name, "Pending", image, {"waiting": {"reason": reason, "message": message}}
        )

    def _run(self, ns: str, name: str) -> None:
        """The kubelet's work for one pod: pull, create, start, wait, report."""
        import docker

        with self.server.state.cond:
            pod = copy.deepcopy(self.server.state.pods[(ns, name)])
        spec = pod["spec"]
        c = spec["containers"][0]
        image = c["image"]
        try:
            self.client.images.get(image)
        except docker.errors.ImageNotFound:
            self._waiting(
                ns, name, image, "ErrImagePull", f'failed to pull image "{image}": not found'
            )
            time.sleep(0.3)
            self._waiting(ns, name, image, "ImagePullBackOff", f'Back-off pulling image "{image}"')
            return
        env: dict[str, str] = {}
        for e in c.get("env") or []:
            ref = (e.get("valueFrom") or {}).get("secretKeyRef")
            if ref is None:
                env[e["name"]] = e["value"]
                continue
            data = (self.secrets.get((ns, ref["name"])) or {}).get("stringData") or {}
            if ref["key"] not in data:
                why = f'secret "{ref["name"]}" not found or has no key {ref["key"]}'
                return self._waiting(ns, name, image, "CreateContainerConfigError", why)
            env[e["name"]] = data[ref["key"]]
        try:
            cid = self._create(ns, name, spec, c, env)
        except docker.errors.APIError as exc:
            return self._waiting(ns, name, image, "CreateContainerError", str(exc))
        if (ns, name) not in self.server.state.pods:  # deleted while it was being created
            return self.removed(ns, name)
        started = now()
        try:
            self.client.api.start(cid)
        except docker.errors.APIError as exc:
            return self._ended(ns, name, image, 128, "StartError", started, str(exc.explanation))
        self._report(ns, name, "Running", image, {"running": {"startedAt": started}})
        deadline = spec.get("activeDeadlineSeconds")
        try:
            result = self.client.api.wait(cid, timeout=deadline)
        except Exception:
            with contextlib.suppress(Exception):
                if self.client.api.inspect_container(cid)["State"]["Running"]:
                    self.client.api.kill(cid)
                    self._status(
                        ns,
                        name,
                        {
                            "phase": "Failed",
                            "reason": "DeadlineExceeded",
                            "message": "Pod was active on the node longer than the specified deadline",
                        },
                    )
            return
        try:
            info = self.client.api.inspect_container(cid)["State"]
        except docker.errors.NotFound:  # the pod was deleted: nothing left to report on
            return
        code = int(result.get("StatusCode", info.get("ExitCode", 1)))
        reason = "OOMKilled" if info.get("OOMKilled") else ("Completed" if code == 0 else "Error")
        self._ended(ns, name, image, code, reason, started, "")

    def _ended(
        self, ns: str, name: str, image: str, code: int, reason: str, started: str, message: str
    ) -> None:
        terminated = {"exitCode": code, "reason": reason, "startedAt": started, "finishedAt": now()}
        if message:
            terminated["message"] = message
        phase = "Succeeded" if code == 0 else "Failed"
        self._report(ns, name, phase, image, {"terminated": terminated})

    def _create(
        self, ns: str, name: str, spec: dict[str, Any], c: dict[str, Any], env: dict[str, str]
    ) -> str:
        from docker.types import Mount

        psc, sc = spec.get("securityContext") or {}, c.get("securityContext") or {}
        uid = sc.get("runAsUser", psc.get("runAsUser"))
        gid = sc.get("runAsGroup", psc.get("runAsGroup"))
        volumes = {v["name"]: v for v in spec.get("volumes") or []}
        tmpfs: dict[str, str] = {}
        mounts: list[Any] = []
        for m in c.get("volumeMounts") or []:
            v = volumes[m["name"]]
            if "emptyDir" in v:
                size = str(v["emptyDir"].get("sizeLimit", "64Mi")).replace("i", "")
                tmpfs[m["mountPath"]] = f"size={size.lower()},mode=1777"
            elif "secret" in v:
                folder = tempfile.TemporaryDirectory(prefix="kubelet-secret-")
                self.dirs.append(folder)
                data = (self.secrets.get((ns, v["secret"]["secretName"])) or {}).get(
                    "stringData"
                ) or {}
                for item in v["secret"].get("items") or [{"key": k, "path": k} for k in data]:
                    path = Path(folder.name) / item["path"]
                    path.write_text(data[item["key"]])
                    path.chmod(0o444)
                Path(folder.name).chmod(0o755)
                mounts.append(Mount(m["mountPath"], folder.name, type="bind", read_only=True))
        limits = (c.get("resources") or {}).get("limits") or {}
        memory = str(limits.get("memory", "256Mi")).replace("i", "").lower()
        cpu = str(limits.get("cpu", "1000m"))
        nano = int(cpu[:-1]) * 1_000_000 if cpu.endswith("m") else int(float(cpu) * 1e9)
        host = self.client.api.create_host_config(
            network_mode="none",
            read_only=bool(sc.get("readOnlyRootFilesystem")),
            cap_drop=["ALL"] if "ALL" in (sc.get("capabilities") or {}).get("drop", []) else None,
            security_opt=["no-new-privileges"]
            if sc.get("allowPrivilegeEscalation") is False
            else None,
            privileged=False,
            tmpfs=tmpfs,
            mounts=mounts,
            mem_limit=memory,
            memswap_limit=memory,
            nano_cpus=nano,
        )
        created = self.client.api.create_container(
            c["image"],
            entrypoint=c["command"][:1],
            command=c["command"][1:],
            user=f"{uid}:{gid}" if uid is not None else None,
            working_dir=c.get("workingDir"),
            environment=env,
            labels={"guard-test-kubelet": self.prefix},
            name=f"{self.prefix}kubelet-{ns}-{name}",
            host_config=host,
        )
        cid: str = created["Id"]
        with self.lock:
            self.containers[(ns, name)] = cid
        return cid

    def removed(self, ns: str, name: str) -> None:
        """The pod was deleted: its container goes (its processes with it)."""
        with self.lock:
            cid = self.containers.pop((ns, name), None)
        if cid is not None:
            with contextlib.suppress(Exception):
                self.client.api.remove_container(cid, force=True)

    def close(self) -> None:
        for ns, name in list(self.containers):
            self.removed(ns, name)
        for folder in self.dirs:
            folder.cleanup()

    # -- the log --------------------------------------------------------------------------------

    def log(self, h: Any, ns: str, name: str, query: dict[str, str]) -> bool:
        """Serve ``GET .../pods/{name}/log`` for a pod this kubelet ran; False if it did not."""
        with self.lock:
            cid = self.containers.get((ns, name))
        if cid is None:
            return False
        left = int(query["limitBytes"]) if "limitBytes" in query else None
        h.send_response(200)
        h.send_header("Content-Type", "text/plain")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        with contextlib.suppress(Exception):
            for data in self.client.api.logs(cid, stream=True, follow=False):
                if left is not None:
                    data, left = data[:left], left - len(data[:left])
                for at in range(0, len(data), CHUNK):
                    piece = data[at : at + CHUNK]
                    h.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                if left == 0:
                    break
        h.stream_end()
        return True


def pods_route(
    server: Any, h: Any, method: str, path: str, query: dict[str, str], body: Any
) -> bool:
    """The sandbox's part of the REST surface; False when ``path`` is not one of its own."""
    from tests.fakes.kube_routes import listing, status

    kubelet: Kubelet | None = getattr(server, "kubelet", None)
    if kubelet is None:
        return False
    if fault := kubelet.fault(method, path):
        if fault.status:
            h.reply(
                fault.status,
                status(
                    fault.status,
                    "TooManyRequests" if fault.status == 429 else "InternalError",
                    "injected fault",
                ),
            )
            return True
        time.sleep(fault.stall)
    st = server.state
    if (m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods", path)) and method == "POST":
        code, obj = kubelet.admit(m.group(1), body)
        h.reply(code, obj)
        return True
    if m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)", path):
        ns, name = m.groups()
        if method == "GET":
            with st.cond:
                pod = copy.deepcopy(st.pods.get((ns, name)))
            if pod is None:
                h.reply(404, status(404, "NotFound", f'pods "{name}" not found'))
            else:
                h.reply(200, pod)
            return True
        if method == "DELETE":  # the API server forgets it first; then the kubelet kills it
            gone = st.delete_pod(ns, name)
            kubelet.removed(ns, name)
            if gone is None:
                h.reply(404, status(404, "NotFound", f'pods "{name}" not found'))
            else:
                h.reply(200, gone)
            return True
    if (
        m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)/log", path)
    ) and method == "GET":
        return kubelet.log(h, m.group(1), m.group(2), query)
    if m := re.fullmatch(r"/api/v1/namespaces/([^/]+)/secrets(?:/([^/]+))?", path):
        ns, name = m.groups()
        key = (ns, name or "")
        if method == "POST":
            name = body["metadata"]["name"]
            if (ns, name) in kubelet.secrets:
                h.reply(409, status(409, "AlreadyExists", f'secrets "{name}" already exists'))
                return True
            kubelet.secrets[(ns, name)] = copy.deepcopy(body)
            shown = copy.deepcopy(body)
            shown.pop("stringData", None)
            h.reply(201, shown)
        elif method == "DELETE":
            found = kubelet.secrets.pop(key, None)
            if found is None:
                h.reply(404, status(404, "NotFound", f'secrets "{name}" not found'))
            else:
                h.reply(200, status(200, "", "deleted") | {"status": "Success"})
        else:
            from tests.fakes.kube import selects

            items = [
                {k: v for k, v in s.items() if k != "stringData"}
                for (n, _), s in kubelet.secrets.items()
                if n == ns
                and selects(query.get("labelSelector"), s["metadata"].get("labels") or {})
            ]
            h.reply(200, listing("SecretList", st.rv, items))
        return True
    if m := re.fullmatch(
        r"/apis/networking\.k8s\.io/v1/namespaces/([^/]+)/networkpolicies/([^/]+)", path
    ):
        found = kubelet.policies.get((m.group(1), m.group(2)))
        if found is None:
            h.reply(
                404,
                status(
                    404, "NotFound", f'networkpolicies.networking.k8s.io "{m.group(2)}" not found'
                ),
            )
        else:
            h.reply(200, found)
        return True
    return False
