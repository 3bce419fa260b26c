"""Read a Pod's status the way an operator would: what is wrong, and with which workload.

Problems, most specific first for each container: OOM-killed (now, or as the reason a
crash-looping container last died), ``CrashLoopBackOff``, image pull failures
(``ImagePullBackOff``, ``ErrImagePull``, ``InvalidImageName``), other container start errors,
a failed pod (``Evicted``...), and a running pod that has not been ready for longer than the
monitor's ``not_ready_after``.

Signals are about the *workload* (``namespace/deployment``, found through the owner
ReplicaSet and its ``pod-template-hash``), not the pod: a crash-looping Deployment is one
incident however many times its pods are replaced, and the messages never name the pod (it is
in the details) so the fingerprint stays stable. A workload is healthy only when every pod of it
that we know is ready.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

IMAGE_PULL = {"ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull"}
START_ERRORS = {
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
    "PreCreateHookError",
    "PostStartHookError",
}


@dataclass(frozen=True)
class Problem:
    kind: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)


def workload(pod: dict[str, Any]) -> tuple[str, str]:
    """(kind, name) of what owns ``pod``: Deployment via its ReplicaSet, else the owner."""
    meta = pod.get("metadata") or {}
    owners = [o for o in meta.get("ownerReferences") or [] if o.get("controller")] or list(
        meta.get("ownerReferences") or []
    )
    if not owners:
        return "Pod", str(meta.get("name", ""))
    owner = owners[0]
    kind, name = str(owner.get("kind", "")), str(owner.get("name", ""))
    hash_ = (meta.get("labels") or {}).get("pod-template-hash")
    if kind == "ReplicaSet" and hash_ and name.endswith(f"-{hash_}"):
        return "Deployment", name[: -len(hash_) - 1]
    return kind, name


def _parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _container_problem(cs: dict[str, Any]) -> Problem | None:
    name = cs.get("name", "?")
    state, last = cs.get("state") or {}, cs.get("lastState") or {}
    waiting = (state.get("waiting") or {}).get("reason")
    terminated = state.get("terminated") or {}
    last_term = last.get("terminated") or {}
    base = {"container": name, "restart_count": cs.get("restartCount", 0), "image": cs.get("image")}
    if terminated.get("reason") == "OOMKilled" or (
        waiting == "CrashLoopBackOff" and last_term.get("reason") == "OOMKilled"
    ):
        code = terminated.get("exitCode", last_term.get("exitCode"))
        return Problem(
            "k8s_oom_killed",
            f"container {name} was OOM-killed (exit code {code}"
            f", {cs.get('restartCount', 0)} restarts)",
            {**base, "reason": "OOMKilled", "exit_code": code, "waiting": waiting},
        )
    if waiting == "CrashLoopBackOff":
        code, why = last_term.get("exitCode"), last_term.get("reason")
        return Problem(
            "k8s_crash_loop_back_off",
            f"container {name} is in CrashLoopBackOff (last exit: {why}, code {code})",
            {**base, "reason": waiting, "exit_code": code, "last_reason": why},
        )
    if waiting in IMAGE_PULL:
        return Problem(
            "k8s_image_pull_failed",
            f"container {name} cannot pull its image ({waiting})",
            {**base, "reason": waiting, "detail": (state.get("waiting") or {}).get("message")},
        )
    if waiting in START_ERRORS:
        return Problem(
            "k8s_container_error",
            f"container {name} cannot start ({waiting})",
            {**base, "reason": waiting, "detail": (state.get("waiting") or {}).get("message")},
        )
    return None


def problems(
    pod: dict[str, Any], *, not_ready_after: float, now: datetime | None = None
) -> list[Problem]:
    """Everything wrong with ``pod`` (empty when nothing is, or nothing is known yet)."""
    status = pod.get("status") or {}
    found = [
        p
        for cs in (status.get("initContainerStatuses") or [])
        + (status.get("containerStatuses") or [])
        if (p := _container_problem(cs)) is not None
    ]
    phase = status.get("phase")
    if phase == "Failed":
        reason = status.get("reason") or "Failed"
        found.append(
            Problem(
                "k8s_pod_failed",
                f"a pod failed ({reason})",
                {"reason": reason, "detail": status.get("message")},
            )
        )
    if found or phase != "Running" or ready(pod):
        return found
    since = next(
        (
            _parse_time(c.get("lastTransitionTime"))
            for c in status.get("conditions") or []
            if c.get("type") == "Ready"
        ),
        None,
    )
    age = ((now or datetime.now(UTC)) - since).total_seconds() if since else 0.0
    if age >= not_ready_after:
        found.append(
            Problem(
                "k8s_pod_not_ready",
                f"a pod has not been ready for {age:.0f}s",
                {"reason": "NotReady", "not_ready_seconds": round(age)},
            )
        )
    return found


def ready(pod: dict[str, Any]) -> bool:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False
