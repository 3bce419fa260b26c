"""``KubeSandbox``: each command is one short-lived Pod in ``sandbox.namespace``; never an exec
into a workload.

A step: (1) a Secret for that pod when it has granted secrets or stdin, (2) the Pod
(``kube_spec.pod_manifest``), (3) its status polled until the container terminates, the budget
runs out, or the pod cannot start (an image pull refused is a ``SandboxError`` at once, not a
wait until the deadline), (4) its log read through capped ``OutputBuffer``s (the log API merges
stdout and stderr, so the whole log is ``stdout``), the exit code from its status, and (5) the
Pod and Secret deleted whatever happened. A timeout deletes the Pod, which ends every process
the command started; ``activeDeadlineSeconds`` ends it even if Guard is gone. A 429, a 5xx or an
unreachable API is retried until the step's budget is spent, then reported. ``/workspace`` does
not outlive a command: each command gets a fresh Pod.

Cluster access is the ``kubernetes:`` section's (the same as the monitors'); the blocking client
runs in a worker thread. ``reap_orphans`` deletes the step pods and secrets of dead Guards.
"""

from __future__ import annotations

import asyncio
import secrets as _secrets
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from loguru import logger

from guard.config import KubernetesSettings, SandboxSettings
from guard.domain.exceptions import KubernetesError, SandboxError
from guard.k8s.client import KubeClient, context_namespace, pod_namespace
from guard.redact import Redactor
from guard.sandbox import kube_spec as spec
from guard.sandbox.base import (
    TIMEOUT_EXIT_CODE,
    Command,
    ExecResult,
    OutputBuffer,
    SandboxGrants,
    argv,
    in_worker,
)
from guard.sandbox.owners import INSTANCE_ID, LABEL, LABEL_OWNER, owner_alive

T = TypeVar("T")
NEVER_STARTS = {  # a waiting reason that no wait cures
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "CreateContainerConfigError",
    "CreateContainerError",
}
TRANSIENT = {None, 429, 500, 502, 503, 504}  # no answer, too many requests, server trouble
LOG_READ_LIMIT = 64 * 1024 * 1024  # bytes of a step's log read at most (the rest is dropped)


def sandbox_namespace(settings: SandboxSettings, cluster: KubernetesSettings) -> str:
    """``sandbox.namespace``, else the kubeconfig context's, else Guard's own pod's."""
    found = settings.namespace or context_namespace(cluster) or pod_namespace()
    if not found:
        raise SandboxError(
            "sandbox.namespace is not set and neither the kubeconfig context nor a service "
            "account names one: set sandbox.namespace"
        )
    return found


class KubeSandbox:
    """The ``Sandbox`` of one incident on a cluster (see module docstring)."""

    def __init__(
        self,
        settings: SandboxSettings,
        *,
        incident_id: str,
        grants: SandboxGrants | None = None,
        secrets: Mapping[str, str] | None = None,
        redactor: Redactor | None = None,
        client: KubeClient | None = None,
        cluster: KubernetesSettings | None = None,
        image: str | None = None,
    ) -> None:
        self.settings = settings
        self.incident_id = incident_id
        self.grants = grants or SandboxGrants()
        self.image = spec.check_image(settings, image or settings.image)
        if self.grants.mounts:
            raise SandboxError(
                "the kubernetes sandbox backend mounts no host paths: drop the playbook's "
                "sandbox mounts grant, or use sandbox.backend: docker"
            )
        self._secrets = dict(secrets or {})
        self.redactor = redactor or Redactor()
        for name, value in self._secrets.items():
            self.redactor.register(name, value)
        self._cluster = cluster or KubernetesSettings()
        self._client = client
        self._own_client = client is None
        self._namespace: str | None = None
        self._lock = asyncio.Lock()

    @property
    def kube(self) -> KubeClient:
        if self._client is None:
            self._client = connect(self._cluster)
        return self._client

    @property
    def namespace(self) -> str:
        if self._namespace is None:
            self._namespace = sandbox_namespace(self.settings, self._cluster)
        return self._namespace

    async def close(self) -> None:
        """Nothing outlives a command; only the client this sandbox opened is closed."""
        async with self._lock:
            if self._own_client and self._client is not None:
                self._client.close()
                self._client = None

    async def run(
        self,
        command: Command,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 (a per-command budget)
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
        stdin: bytes | str | None = None,
    ) -> ExecResult:
        cmd = argv(command)
        data = stdin.encode() if isinstance(stdin, str) else stdin
        budget = timeout or self.settings.timeout
        async with self._lock:  # held until a cancelled step's pod is deleted
            return await in_worker(
                lambda abort: self._step(cmd, budget, dict(env or {}), workdir, data, abort)
            )

    # -- one step, in a worker thread ----------------------------------------------------------

    def _step(
        self,
        cmd: list[str],
        timeout: float,
        env: dict[str, str],
        workdir: str | None,
        stdin: bytes | None,
        abort: threading.Event,
    ) -> ExecResult:
        t0 = time.monotonic()
        deadline = t0 + timeout
        ns = self.namespace
        name = (
            f"guard-sbx-{spec.label_value(self.incident_id)[:30].lower()}-{_secrets.token_hex(4)}"
        )
        name = name.replace("_", "-").replace(".", "-")
        meta = spec.metadata(self.incident_id, self.grants.network, timeout)
        secret = spec.secret_manifest(name, meta, self._secrets, stdin)
        made: list[str] = []
        try:
            if self.grants.network:
                self._check_policy(ns, self.grants.network, deadline)
            if secret is not None:
                self._api(
                    lambda: self.kube.create_secret(ns, secret), "create its secret", deadline
                )
                made.append("secret")
            pod = spec.pod_manifest(
                self.settings,
                name=name,
                meta=meta,
                image=self.image,
                argv=cmd,
                env=env,
                secret_names=sorted(self._secrets),
                secret=name if secret is not None else None,
                stdin=stdin is not None,
                workdir=workdir,
                timeout=timeout,
            )
            made.insert(0, "pod")
            self._api(lambda: self.kube.create_pod(ns, pod), "create its pod", deadline)
            state = self._wait(ns, name, deadline, abort)
            out = OutputBuffer(self.settings.output_limit, self.redactor.max_length)
            self._read_log(ns, name, out, deadline + spec.GRACE)
            err = OutputBuffer(self.settings.output_limit, self.redactor.max_length)
            stdout, stderr = out.text(self.redactor), err.text(self.redactor)
            duration = time.monotonic() - t0
            if state is None:
                return ExecResult(
                    TIMEOUT_EXIT_CODE,
                    stdout,
                    stderr,
                    duration,
                    timed_out=True,
                    stdout_truncated=out.dropped,
                )
            return ExecResult(
                int(state.get("exitCode", 1)),
                stdout,
                stderr,
                duration,
                oom_killed=state.get("reason") == "OOMKilled",
                stdout_truncated=out.dropped,
            )
        finally:
            for kind in made:
                try:
                    self.kube.delete_now(kind, ns, name)
                except KubernetesError as exc:
                    logger.warning(
                        "could not delete sandbox {} {}: {} (the reaper will)", kind, name, exc
                    )

    def _api(self, call: Callable[[], T], what: str, deadline: float) -> T:
        """``call``, retried while the API answers 429/5xx or not at all, until ``deadline``."""
        pause = 0.2
        while True:
            try:
                return call()
            except KubernetesError as exc:
                if exc.status not in TRANSIENT or time.monotonic() + pause >= deadline:
                    said = self.redactor.redact(str(exc))
                    what_failed = f"sandbox step could not {what} in the cluster: {said}"
                    raise SandboxError(what_failed) from None
                time.sleep(pause)
                pause = min(pause * 2, 2.0)

    def _check_policy(self, ns: str, network: str, deadline: float) -> None:
        try:
            self.kube.get_network_policy(ns, network)
        except KubernetesError as exc:
            if exc.status == 404:
                raise SandboxError(
                    f"granted network {network!r}: no NetworkPolicy {network!r} in namespace {ns}; "
                    "create one that selects the label guard.network="
                    f"{spec.label_value(network)} (see deploy/kubernetes/sandbox.yaml)"
                ) from None
            self._api(
                lambda: self.kube.get_network_policy(ns, network), "read its policy", deadline
            )

    def _wait(
        self, ns: str, name: str, deadline: float, abort: threading.Event
    ) -> dict[str, Any] | None:
        """The step container's ``terminated`` state, or None when the budget ran out."""
        pause = 0.05
        while not abort.is_set() and time.monotonic() < deadline:
            try:
                pod = self.kube.get_pod(ns, name)
            except KubernetesError as exc:
                if exc.status == 404:
                    raise SandboxError(
                        f"the sandbox pod {ns}/{name} was deleted during the command "
                        "(evicted, or removed by someone else)"
                    ) from None
                if exc.status not in TRANSIENT:
                    raise SandboxError(f"sandbox step: {exc}") from None
                pod = {}
            status = pod.get("status") or {}
            for found in status.get("containerStatuses") or []:
                state = found.get("state") or {}
                waiting = (state.get("waiting") or {}).get("reason")
                if waiting in NEVER_STARTS:
                    message = (state["waiting"].get("message") or "").strip()
                    raise SandboxError(
                        f"the sandbox pod {ns}/{name} cannot start: {waiting} "
                        f"({message or 'no detail'}); check sandbox.image {self.image!r} "
                        "is pullable by the cluster"
                    )
                if "terminated" in state:
                    return dict(state["terminated"])
            if status.get("phase") == "Failed":  # ended with no container state: deadline, eviction
                reason = status.get("reason") or "Failed"
                if reason == "DeadlineExceeded":
                    return None
                raise SandboxError(
                    f"the sandbox pod {ns}/{name} failed: {reason} {status.get('message') or ''}"
                )
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 1.5, 0.5)
        return None

    def _read_log(self, ns: str, name: str, out: OutputBuffer, deadline: float) -> None:
        """The pod's log, fed to ``out`` in pieces (at most ``LOG_READ_LIMIT`` bytes read)."""
        try:
            res = self.kube.pod_log(
                ns,
                name,
                spec.CONTAINER,
                limit_bytes=LOG_READ_LIMIT,
                timestamps=False,
                read_timeout=max(1.0, deadline - time.monotonic()),
            )
        except KubernetesError as exc:
            logger.warning("sandbox step {}: no log ({})", name, exc)
            return
        try:
            while chunk := res.read(65536):
                out.feed(chunk)
        except Exception as exc:
            logger.warning("sandbox step {}: log cut short ({})", name, type(exc).__name__)
        finally:
            res.close()


def reap_orphans(kube: KubeClient, namespace: str, *, now: float | None = None) -> int:
    """Delete the step pods and secrets of Guards that are gone; return how many.

    A step's objects are orphans when the Guard that made them is dead (this host, a pid that
    is not that process) or when their deadline has passed (any replica: no live step is
    older than its budget). A live Guard's running steps are spared.
    """
    now = time.time() if now is None else now
    removed = 0
    for kind, listing in (("pod", kube.list_pods), ("secret", kube.list_secrets)):
        for item in listing(namespace, f"{LABEL}=1").get("items") or []:
            meta = item.get("metadata") or {}
            tags = meta.get("labels") or {}
            if tags.get(LABEL_OWNER) == spec.label_value(INSTANCE_ID):
                continue
            expired = float((meta.get("annotations") or {}).get(spec.DEADLINE) or 0) < now
            if owner_alive(tags) and not expired:
                continue
            kube.delete_now(kind, namespace, meta["name"])
            removed += 1
            logger.info("reaped orphaned sandbox {} {}/{}", kind, namespace, meta["name"])
    return removed


def connect(cluster: KubernetesSettings) -> KubeClient:
    """A client for the cluster the ``kubernetes:`` section names (as the monitors use)."""
    try:
        return KubeClient(cluster)
    except KubernetesError as exc:
        raise SandboxError(f"sandbox.backend kubernetes: {exc}") from None


def probe(settings: SandboxSettings, cluster: KubernetesSettings) -> str | None:
    """Why step pods cannot run here (``auto``'s question), or None when the cluster answers."""
    try:
        kube = connect(cluster)
    except SandboxError:
        return "no cluster"
    try:
        kube.list_pods(sandbox_namespace(settings, cluster), f"{LABEL}=1")
    except (KubernetesError, SandboxError) as exc:
        return f"no cluster ({exc})"
    finally:
        kube.close()
    return None
