"""deploy/kubernetes/*.yaml are valid objects (the official client's models) and fit together."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from kubernetes.client import ApiClient

from guard.playbooks.loader import load_playbook

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes"
DOCKERFILE = Path(__file__).resolve().parents[2] / "deploy" / "Dockerfile"


def objects() -> dict[tuple[str, str], dict[str, Any]]:
    found = {}
    for path in sorted(DEPLOY.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            found[(doc["kind"], doc["metadata"]["name"])] = doc
    return found


def model(doc: dict[str, Any]) -> Any:
    """The client's typed object: raises on a wrong type or a missing required field."""
    version = doc["apiVersion"].split("/")[-1].capitalize()
    return ApiClient()._ApiClient__deserialize(doc, f"{version}{doc['kind']}")  # type: ignore[attr-defined]


def test_every_object_is_a_valid_kubernetes_object() -> None:
    docs = objects()
    assert {kind for kind, _ in docs} >= {
        "Deployment",
        "PersistentVolumeClaim",
        "Service",
        "ServiceAccount",
        "ClusterRole",
        "RoleBinding",
    }
    for doc in docs.values():
        assert model(doc).kind == doc["kind"]


def test_the_deployment_fits_the_image_rbac_and_endpoints() -> None:
    docs = objects()
    deployment = model(docs[("Deployment", "guard")])
    pod = deployment.spec.template.spec
    [container] = pod.containers
    assert deployment.spec.replicas == 1 and deployment.spec.strategy.type == "Recreate"
    account = docs[("ServiceAccount", pod.service_account_name)]
    assert account["metadata"]["namespace"] == deployment.metadata.namespace
    # probes hit the endpoints guard run serves, on the port it listens on
    env = {e.name: e.value for e in container.env}
    [port] = container.ports
    assert port.container_port == int(env["PORT"])
    assert container.liveness_probe.http_get.path == "/healthz"
    assert container.startup_probe.http_get.path == "/healthz"
    assert container.readiness_probe.http_get.path == "/readyz"
    # non-root as the image's user, state on the claim at the image's data dir
    assert (
        pod.security_context.run_as_non_root
        and f"--uid {pod.security_context.run_as_user} " in DOCKERFILE.read_text()
    )
    assert container.security_context.read_only_root_filesystem
    mounts = {m.mount_path: m.name for m in container.volume_mounts}
    volumes = {v.name: v for v in pod.volumes}
    assert env["GUARD_DATA_DIR"] == "/data"
    claim = volumes[mounts["/data"]].persistent_volume_claim.claim_name
    assert ("PersistentVolumeClaim", claim) in docs
    assert volumes[mounts["/tmp"]].empty_dir is not None  # the root filesystem is read-only
    service = model(docs[("Service", "guard")])
    assert service.spec.selector == deployment.spec.selector.match_labels


def test_the_shipped_playbook_is_valid(tmp_path: Path) -> None:
    config_map = objects()[("ConfigMap", "guard-playbooks")]
    for name, text in config_map["data"].items():
        (tmp_path / name).write_text(text)
        book = load_playbook(tmp_path / name)
        assert book.monitors[0].type == "kubernetes"


def test_the_ha_variant_runs_two_replicas_on_postgres_that_fit_the_single_one() -> None:
    docs = objects()
    single = model(docs[("Deployment", "guard")])
    ha = model(docs[("Deployment", "guard-ha")])
    assert ha.spec.replicas == 2 and ha.spec.strategy.type == "RollingUpdate"
    assert ha.spec.strategy.rolling_update.max_unavailable == 0
    pod, one = ha.spec.template.spec, single.spec.template.spec
    [container], [base] = pod.containers, one.containers
    assert pod.service_account_name == one.service_account_name
    assert container.readiness_probe.http_get.path == "/readyz"
    assert container.liveness_probe.http_get.path == "/healthz"
    env = {e.name: e for e in container.env}
    assert env["GUARD_HA__REPLICA_ID"].value_from.field_ref.field_path == "metadata.name"
    assert [s.secret_ref.name for s in container.env_from] == ["guard-secrets"]
    assert not any(s.secret_ref.optional for s in container.env_from)  # the database URL
    volumes = {v.name: v for v in pod.volumes}
    assert all(v.persistent_volume_claim is None for v in volumes.values())  # no RWO claim
    assert ha.spec.selector.match_labels == single.spec.selector.match_labels
    assert {e.name for e in base.env} <= set(env)
    budget = model(docs[("PodDisruptionBudget", "guard-ha")])
    assert budget.spec.min_available == 1
    assert budget.spec.selector.match_labels == ha.spec.selector.match_labels


def test_the_ha_variant_elects_by_a_lease_its_role_allows() -> None:
    docs = objects()
    ha = model(docs[("Deployment", "guard-ha")])
    [container] = ha.spec.template.spec.containers
    env = {e.name: e.value for e in container.env}
    assert env["GUARD_HA__BACKEND"] == "kubernetes"
    role = model(docs[("Role", "guard-leader-election")])
    assert role.metadata.namespace == ha.metadata.namespace  # the Lease is in the pod's own
    [rule] = role.rules
    assert rule.api_groups == ["coordination.k8s.io"] and rule.resources == ["leases"]
    assert set(rule.verbs) == {"get", "create", "update"}
    binding = model(docs[("RoleBinding", "guard-leader-election")])
    assert binding.role_ref.kind == "Role" and binding.role_ref.name == role.metadata.name
    [subject] = binding.subjects
    assert subject.name == ha.spec.template.spec.service_account_name
    assert subject.namespace == ha.metadata.namespace
