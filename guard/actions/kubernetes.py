"""Kubernetes remediation actions, each doing what the equivalent kubectl command does.

- ``k8s.rollout_restart`` = ``kubectl rollout restart deployment/NAME``: a strategic-merge patch
  of the pod template's ``kubectl.kubernetes.io/restartedAt`` annotation (RFC 3339, UTC), which
  makes the controller roll every pod; refused for a paused deployment, as kubectl refuses.
- ``k8s.rollout_undo`` = ``kubectl rollout undo``: find the deployment's ReplicaSets (its
  selector, owned by its uid), take the one with the previous ``deployment.kubernetes.io/
  revision`` (or ``to_revision``), drop its ``pod-template-hash`` label, and JSON-patch the
  deployment's template and annotations back to it.
  ``k8s.rollback`` is the same action by the name the action set of issue 45 uses.
- ``k8s.scale`` = ``kubectl scale --replicas=N``: a merge patch of the ``scale`` subresource of
  a deployment, or with ``kind=statefulset`` of a StatefulSet.
- ``k8s.delete_pod`` = ``kubectl delete pod``: its controller replaces it.
- ``k8s.logs`` = ``kubectl logs --tail=N -c CONTAINER``: a container's last lines (evidence;
  changes nothing), redacted and bounded.

Names come from the arguments or, failing that, from the incident's details (a kubernetes
monitor records ``namespace``, ``deployment``, ``pod`` and ``container``). The client blocks, so
each action runs in a worker thread. The RBAC these need is in ``deploy/kubernetes/rbac.yaml``.
"""

from __future__ import annotations

import asyncio
import copy
from abc import ABC, abstractmethod
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from guard.actions.base import ActionContext, ActionError, ActionResult, tail_arg
from guard.domain.exceptions import KubernetesError
from guard.k8s.client import JSON_PATCH, STRATEGIC_MERGE, KubeClient
from guard.k8s.evidence import log_text

RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
REVISION = "deployment.kubernetes.io/revision"
# Annotations kubectl keeps from the deployment rather than copying from the ReplicaSet.
SKIP_ANNOTATIONS = {
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    "deployment.kubernetes.io/revision-history",
    "deployment.kubernetes.io/desired-replicas",
    "deployment.kubernetes.io/max-replicas",
    "deprecated.deployment.rollback.to",
}
MAX_REPLICAS = 100
MAX_TAIL = 1000


def label_selector(selector: Mapping[str, Any]) -> str:
    """A LabelSelector object as the query-string syntax (``app=api,tier in (web)``)."""
    terms = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], ",".join(expr.get("values") or [])
        terms.append(
            {
                "In": f"{key} in ({values})",
                "NotIn": f"{key} notin ({values})",
                "Exists": key,
                "DoesNotExist": f"!{key}",
            }[op]
        )
    return ",".join(terms)


class KubeAction(ABC):
    name = ""
    description = ""
    params: tuple[str, ...] = ()
    target = "deployment"  # the parameter naming the object acted on

    async def run(self, args: Mapping[str, Any], ctx: ActionContext) -> ActionResult:
        details = (ctx.incident or {}).get("details") or ctx.incident or {}
        name = args.get(self.target) or details.get(self.target)
        if not name:
            raise ActionError(
                f"{self.name} needs a {self.target} name, e.g. '{self.name} api namespace=shop'"
            )
        namespace = str(args.get("namespace") or details.get("namespace") or "default")
        return await asyncio.to_thread(self._run, ctx, str(name), namespace, args)

    def _run(
        self, ctx: ActionContext, name: str, namespace: str, args: Mapping[str, Any]
    ) -> ActionResult:
        kube: KubeClient | None = None
        try:
            kube = KubeClient(ctx.settings.kubernetes)
            return self.act(kube, name, namespace, args)
        except KubernetesError as exc:
            raise ActionError(f"{self.name} {namespace}/{name}: {exc}") from None
        finally:
            if kube is not None:
                kube.close()

    @abstractmethod
    def act(
        self, kube: KubeClient, name: str, namespace: str, args: Mapping[str, Any]
    ) -> ActionResult:
        """What the action does to what it found."""


class RolloutRestart(KubeAction):
    name = "k8s.rollout_restart"
    description = "Restart a deployment's pods one by one (kubectl rollout restart)."
    params = ("deployment", "namespace")

    def act(
        self, kube: KubeClient, name: str, namespace: str, args: Mapping[str, Any]
    ) -> ActionResult:
        dep = kube.get_deployment(namespace, name)
        if (dep.get("spec") or {}).get("paused"):
            raise ActionError(
                f"deployment {namespace}/{name} is paused; resume it first "
                "(kubectl rollout resume) or it will not restart"
            )
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        patch = {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: stamp}}}}}
        kube.patch_deployment(namespace, name, patch, STRATEGIC_MERGE)
        return ActionResult(
            True,
            f"deployment {namespace}/{name} restarted (restartedAt {stamp})",
            {"namespace": namespace, "deployment": name, "restarted_at": stamp, "patch": patch},
        )


class DeletePod(KubeAction):
    name = "k8s.delete_pod"
    description = "Delete a pod so its controller starts a fresh one (kubectl delete pod)."
    params = ("pod", "namespace")
    target = "pod"

    def act(
        self, kube: KubeClient, name: str, namespace: str, args: Mapping[str, Any]
    ) -> ActionResult:
        gone = kube.delete_pod(namespace, name)
        uid = (gone.get("metadata") or {}).get("uid")
        return ActionResult(
            True,
            f"pod {namespace}/{name} deleted",
            {"namespace": namespace, "pod": name, "uid": uid},
        )


class Scale(KubeAction):
    name = "k8s.scale"
    description = "Set a deployment's (or kind=statefulset's) replica count (kubectl scale)."
    params = ("deployment", "replicas", "namespace")

    def act(
        self, kube: KubeClient, name: str, namespace: str, args: Mapping[str, Any]
    ) -> ActionResult:
        try:
            replicas = int(args["replicas"])
        except (KeyError, TypeError, ValueError):
            raise ActionError(f"{self.name} needs replicas=N (a whole number)") from None
        if not 0 <= replicas <= MAX_REPLICAS:
            raise ActionError(f"{self.name}: replicas must be between 0 and {MAX_REPLICAS}")
        kind = str(args.get("kind") or "deployment").lower()
        if kind not in ("deployment", "statefulset"):
            raise ActionError(f"{self.name}: kind must be deployment or statefulset, not {kind!r}")
        found = (
            kube.get_statefulset(namespace, name)
            if kind == "statefulset"
            else kube.get_deployment(namespace, name)
        )
        before = (found.get("spec") or {}).get("replicas")
        scale = kube.patch_scale(namespace, name, replicas, kind)
        return ActionResult(
            True,
            f"{kind} {namespace}/{name} scaled {before} -> {replicas}",
            {
                "namespace": namespace,
                kind: name,
                "from": before,
                "replicas": (scale.get("spec") or {}).get("replicas"),
            },
        )


class RolloutUndo(KubeAction):
    name = "k8s.rollout_undo"
    description = "Roll a deployment back to its previous revision (kubectl rollout undo)."
    params = ("deployment", "namespace", "to_revision")

    def act(
        self, kube: KubeClient, name: str, namespace: str, args: Mapping[str, Any]
    ) -> ActionResult:
        dep = kube.get_deployment(namespace, name)
        meta, spec = dep.get("metadata") or {}, dep.get("spec") or {}
        if spec.get("paused"):
            raise ActionError(f"deployment {namespace}/{name} is paused; resume it first")
        current = int((meta.get("annotations") or {}).get(REVISION) or 0)
        owned = [
            rs
            for rs in kube.list_replicasets(
                namespace, label_selector(spec.get("selector") or {})
            ).get("items")
            or []
            if any(
                o.get("uid") == meta.get("uid") for o in rs["metadata"].get("ownerReferences") or []
            )
        ]
        by_rev = {
            int((rs["metadata"].get("annotations") or {}).get(REVISION) or 0): rs for rs in owned
        }
        wanted = int(args.get("to_revision") or 0)
        if wanted == 0:
            earlier = [r for r in by_rev if 0 < r < current]
            if not earlier:
                raise ActionError(
                    f"deployment {namespace}/{name} has no previous revision (current is {current})"
                )
            wanted = max(earlier)
        if wanted not in by_rev:
            raise ActionError(
                f"deployment {namespace}/{name} has no revision {wanted} (known: {sorted(by_rev)})"
            )
        rs = by_rev[wanted]
        template = copy.deepcopy(rs["spec"]["template"])
        (template.get("metadata") or {}).get("labels", {}).pop("pod-template-hash", None)
        if template == spec.get("template"):
            return ActionResult(
                True,
                f"skipped rollback: the template of {namespace}/{name} "
                f"already matches revision {wanted}",
                {"namespace": namespace, "deployment": name, "revision": wanted, "skipped": True},
            )
        annotations = {
            k: v for k, v in (meta.get("annotations") or {}).items() if k in SKIP_ANNOTATIONS
        }
        annotations.update(
            {
                k: v
                for k, v in (rs["metadata"].get("annotations") or {}).items()
                if k not in SKIP_ANNOTATIONS
            }
        )
        patch = [
            {"op": "replace", "path": "/spec/template", "value": template},
            {"op": "replace", "path": "/metadata/annotations", "value": annotations},
        ]
        kube.patch_deployment(namespace, name, patch, JSON_PATCH)
        return ActionResult(
            True,
            f"deployment {namespace}/{name} rolled back from revision "
            f"{current} to {wanted} (ReplicaSet {rs['metadata']['name']})",
            {
                "namespace": namespace,
                "deployment": name,
                "from_revision": current,
                "to_revision": wanted,
                "replicaset": rs["metadata"]["name"],
            },
        )


class Rollback(RolloutUndo):
    """``k8s.rollback``: the name issue 45's action set gives ``k8s.rollout_undo``."""

    name = "k8s.rollback"
    description = "Roll a deployment back to its previous ReplicaSet's template (rollout undo)."


class Logs(KubeAction):
    name = "k8s.logs"
    description = "a pod container's last log lines (evidence; changes nothing)"
    params = ("pod", "container", "tail", "namespace")
    target = "pod"

    async def run(self, args: Mapping[str, Any], ctx: ActionContext) -> ActionResult:
        details = (ctx.incident or {}).get("details") or ctx.incident or {}
        container = args.get("container") or details.get("container")
        if not container:
            raise ActionError("k8s.logs needs a container, e.g. 'k8s.logs api-x2k4p container=app'")
        return await super().run({**args, "container": str(container)}, ctx)

    def act(
        self, kube: KubeClient, name: str, namespace: str, args: Mapping[str, Any]
    ) -> ActionResult:
        tail = tail_arg("k8s.logs", args, 50, MAX_TAIL)
        container = str(args["container"])
        text, count = log_text(kube.tail_log(namespace, name, container, tail))
        return ActionResult(
            True,
            text or "(no log output)",
            {"namespace": namespace, "pod": name, "container": container, "lines": count},
        )


ACTIONS = [RolloutRestart(), DeletePod(), Scale(), RolloutUndo(), Rollback(), Logs()]
