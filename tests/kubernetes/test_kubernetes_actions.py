"""Kubernetes polling (pod problems, Warning events) and the remediation actions' requests."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from sqlmodel import select

from guard.actions.base import ActionContext, ActionError
from guard.actions.registry import ActionRegistry
from guard.app import Guard
from guard.config import KubernetesSettings, Settings
from guard.domain.exceptions import KubernetesError
from guard.k8s.client import load_configuration
from guard.store.models import Incident
from tests.fakes.kube import (
    RBAC,
    KubeServer,
    container_status,
    deployment,
    granted_by_rbac,
    pod,
)
from tests.fakes.kube_statefulsets import add_statefulset, statefulset


def settings_for(home: Any, kube: KubeServer) -> Settings:
    home.write_config({"kubernetes": {"kubeconfig": str(kube.kubeconfig(home.root)), "timeout": 5}})
    home.playbook(
        "k8s",
        [
            {
                "id": "shop-pods",
                "type": "kubernetes",
                "namespace": "shop",
                "selector": "app=api",
                "not_ready_after": "60s",
            }
        ],
    )
    return home.settings()


def incidents(home: Any) -> dict[str, Incident]:
    with home.database().session() as s:
        return {i.kind: i for i in s.exec(select(Incident)).all()}


async def test_polling_classifies_pod_problems_per_workload(home, kube):
    settings = settings_for(home, kube)
    kube.state.put_pod(
        pod(
            "api-7d9f8b6c5d-a",
            statuses=[
                container_status(
                    waiting="CrashLoopBackOff",
                    last_terminated="OOMKilled",
                    exit_code=137,
                    restarts=3,
                )
            ],
            ready=False,
        )
    )
    kube.state.put_pod(
        pod(
            "web-6b5c4d3e2f-b",
            app="api",
            rs="web-6b5c4d3e2f",
            ready=False,
            statuses=[container_status(waiting="ImagePullBackOff")],
        )
    )
    kube.state.put_pod(
        pod(
            "slow-5a4b3c2d1e-c",
            app="api",
            rs="slow-5a4b3c2d1e",
            ready=False,
            not_ready_since="2026-01-01T00:00:00Z",
        )
    )
    kube.state.put_pod(
        pod(
            "other-1",
            app="other",
            statuses=[container_status(waiting="CrashLoopBackOff")],
            ready=False,
        )
    )  # not selected
    await Guard(settings, home.playbooks_loaded()).run_once()
    found = incidents(home)
    assert found["k8s_oom_killed"].target == "shop/api"
    assert found["k8s_oom_killed"].details["exit_code"] == 137
    assert found["k8s_image_pull_failed"].target == "shop/web"
    assert found["k8s_pod_not_ready"].target == "shop/slow"
    assert "k8s_crash_loop_back_off" not in found  # the OOM is the more specific reason
    assert all(i.target != "shop/other" for i in found.values())


async def test_warning_events_are_reported_once_per_occurrence(home, kube):
    settings = settings_for(home, kube)
    kube.state.put_pod(pod("api-7d9f8b6c5d-a"))
    old = kube.state.warning("api-7d9f8b6c5d-a", "BackOff", "old news")
    await Guard(settings, home.playbooks_loaded()).run_once()  # first check: history skipped
    assert "k8s_event_back_off" not in incidents(home)
    kube.state.warning(
        "api-7d9f8b6c5d-a", "FailedMount", 'MountVolume.SetUp failed for volume "data"'
    )
    kube.state.warning("someone-else", "FailedMount", "not ours")  # not a selected pod
    old["count"] = 3  # the kubelet saw the back-off twice more
    await Guard(settings, home.playbooks_loaded()).run_once()
    found = incidents(home)
    assert found["k8s_event_failed_mount"].target == "shop/api"
    assert found["k8s_event_failed_mount"].count == 1
    assert found["k8s_event_back_off"].count == 2
    await Guard(settings, home.playbooks_loaded()).run_once()  # a restart: nothing repeats
    found = incidents(home)
    assert found["k8s_event_failed_mount"].count == 1 and found["k8s_event_back_off"].count == 2
    assert kube.sent("GET", "/events")[0].query == {"fieldSelector": "type=Warning"}


async def test_delete_pod_and_scale_send_what_kubectl_sends(home, kube):
    settings = settings_for(home, kube)
    kube.state.add_deployment(deployment("api", replicas=2))
    kube.state.put_pod(pod("api-7d9f8b6c5d-a"))
    registry = ActionRegistry()
    incident = {"details": {"namespace": "shop", "deployment": "api", "pod": "api-7d9f8b6c5d-a"}}
    result = await registry.get("k8s.delete_pod").run({}, ActionContext(settings, incident))
    assert result.ok and ("shop", "api-7d9f8b6c5d-a") not in kube.state.pods
    [delete] = kube.sent("DELETE")
    assert delete.path == "/api/v1/namespaces/shop/pods/api-7d9f8b6c5d-a"

    action, args = registry.parse("k8s.scale api 4 namespace=shop")
    result = await action.run(args, ActionContext(settings))
    assert result.details == {"namespace": "shop", "deployment": "api", "from": 2, "replicas": 4}
    [patch] = kube.sent("PATCH")
    assert patch.path == "/apis/apps/v1/namespaces/shop/deployments/api/scale"
    assert patch.content_type == "application/merge-patch+json"
    assert patch.body == {"spec": {"replicas": 4}}
    with pytest.raises(ActionError, match="between 0 and 100"):
        await action.run(
            {"deployment": "api", "replicas": "1000", "namespace": "shop"}, ActionContext(settings)
        )


async def test_scale_a_statefulset_like_kubectl_scale_statefulset(home, kube):
    settings = settings_for(home, kube)
    add_statefulset(kube.state, statefulset("db", replicas=1))
    action, args = ActionRegistry().parse("k8s.scale db 3 namespace=shop kind=statefulset")
    result = await action.run(args, ActionContext(settings))
    assert result.details == {"namespace": "shop", "statefulset": "db", "from": 1, "replicas": 3}
    assert "statefulset shop/db scaled 1 -> 3" in result.message
    [patch] = kube.sent("PATCH")
    assert patch.path == "/apis/apps/v1/namespaces/shop/statefulsets/db/scale"
    assert patch.body == {"spec": {"replicas": 3}}
    assert kube.state.statefulsets[("shop", "db")]["spec"]["replicas"] == 3
    with pytest.raises(ActionError, match="kind must be deployment or statefulset"):
        await action.run({**args, "kind": "daemonset"}, ActionContext(settings))
    with pytest.raises(ActionError, match=r'statefulsets\.apps "cache" not found'):
        await action.run({**args, "deployment": "cache"}, ActionContext(settings))


async def test_rollout_undo_restores_the_previous_revision_like_kubectl(home, kube):
    settings = settings_for(home, kube)
    dep = kube.state.add_deployment(deployment("api", image="shop/api:1.4.2"))
    with kube.state.cond:  # kubectl set image: revision 2
        dep["spec"]["template"]["spec"]["containers"][0]["image"] = "shop/api:1.5.0"
        kube.state._reconcile(dep)
    assert dep["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    result = (
        await ActionRegistry()
        .get("k8s.rollout_undo")
        .run({"deployment": "api", "namespace": "shop"}, ActionContext(settings))
    )
    assert result.details["from_revision"] == 2 and result.details["to_revision"] == 1
    [patch] = kube.sent("PATCH")
    assert patch.content_type == "application/json-patch+json"
    assert [op["path"] for op in patch.body] == ["/spec/template", "/metadata/annotations"]
    template = patch.body[0]["value"]
    assert "pod-template-hash" not in template["metadata"]["labels"]
    assert template["spec"]["containers"][0]["image"] == "shop/api:1.4.2"
    assert patch.body[1]["value"]["deployment.kubernetes.io/revision"] == "2"
    live = kube.state.deployments[("shop", "api")]
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "shop/api:1.4.2"
    assert live["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    # Undoing again goes back to 1.5.0 (now revision 2 is the previous one), as kubectl does;
    # k8s.rollback is the same action under the name issue 45 gives it.
    again = (
        await ActionRegistry()
        .get("k8s.rollback")
        .run({"deployment": "api", "namespace": "shop"}, ActionContext(settings))
    )
    assert again.details["to_revision"] == 2
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "shop/api:1.5.0"
    kube.state.add_deployment(deployment("web", image="shop/web:1.0.0"))
    with pytest.raises(ActionError, match="shop/web has no previous revision"):
        await (
            ActionRegistry()
            .get("k8s.rollback")
            .run({"deployment": "web", "namespace": "shop"}, ActionContext(settings))
        )


async def test_paused_deployment_is_not_restarted(home, kube):
    settings = settings_for(home, kube)
    dep = deployment("api")
    dep["spec"]["paused"] = True
    kube.state.add_deployment(dep)
    with pytest.raises(ActionError, match="paused"):
        await (
            ActionRegistry()
            .get("k8s.rollout_restart")
            .run({"deployment": "api", "namespace": "shop"}, ActionContext(settings))
        )
    assert kube.sent("PATCH") == []


async def test_missing_deployment_reports_the_api_message(home, kube):
    settings = settings_for(home, kube)
    with pytest.raises(ActionError, match=r'deployments\.apps "nope" not found'):
        await (
            ActionRegistry()
            .get("k8s.rollout_restart")
            .run({"deployment": "nope", "namespace": "shop"}, ActionContext(settings))
        )


def test_in_cluster_without_a_service_account_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "6443")
    with pytest.raises(KubernetesError, match="in-cluster service account"):
        load_configuration(KubernetesSettings())  # auto: in-cluster, no token mounted here
    # An explicit kubeconfig wins over the in-cluster guess, and its problem is named.
    with pytest.raises(KubernetesError, match=r"kubeconfig .*missing: Invalid kube-config"):
        load_configuration(KubernetesSettings(kubeconfig=tmp_path / "missing"))


def test_rbac_grants_exactly_the_verbs_guard_uses():
    # Every kube fixture also checks that each request it served is allowed by this file.
    docs = list(yaml.safe_load_all(RBAC.read_text()))
    kinds = [d["kind"] for d in docs]
    assert kinds.count("ServiceAccount") == 1 and kinds.count("RoleBinding") == 3
    # the sandbox's step pods: a Role and its binding in the sandbox namespace, nowhere else
    [sandbox] = [d for d in docs if d["kind"] == "Role"]
    assert sandbox["metadata"]["namespace"] == "guard-sandbox"
    [bound] = [d for d in docs if d["kind"] == "RoleBinding" and d["roleRef"]["kind"] == "Role"]
    assert bound["metadata"]["namespace"] == "guard-sandbox"
    assert granted_by_rbac() == {
        ("", "pods", "list"),
        ("", "pods", "watch"),
        ("", "pods/log", "get"),
        ("", "events", "list"),
        ("metrics.k8s.io", "pods", "list"),  # type: resources with pods: (metrics-server)
        ("", "pods", "delete"),
        ("apps", "deployments", "get"),
        ("apps", "deployments", "patch"),
        ("apps", "deployments/scale", "patch"),
        ("apps", "replicasets", "list"),
        ("apps", "statefulsets", "get"),  # k8s.scale kind=statefulset
        ("apps", "statefulsets/scale", "patch"),
        # the guard-sandbox Role (sandbox.backend: kubernetes)
        ("", "pods", "create"),
        ("", "pods", "get"),
        ("", "secrets", "create"),
        ("", "secrets", "list"),
        ("", "secrets", "delete"),
        ("networking.k8s.io", "networkpolicies", "get"),
        # guard-ha.yaml's Role: the leader election's Lease (ha.backend: kubernetes)
        ("coordination.k8s.io", "leases", "get"),
        ("coordination.k8s.io", "leases", "create"),
        ("coordination.k8s.io", "leases", "update"),
    }
