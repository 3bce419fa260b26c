"""deploy/kubernetes/*.yaml are valid objects (the official client's models) and fit together."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from kubernetes.client import ApiClient

from guard.playbooks.loader import load_playbook

DEPLOY = Path(__file__).resolve().parent.parent / "deploy" / "kubernetes"
DOCKERFILE = Path(__file__).resolve().parent.parent / "deploy" / "Dockerfile"


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
