"""The step pod's manifest on its own (no cluster): sizes, labels, the user, the allowlist, and
a pod that the fake's Pod Security admission and the official client's model both accept."""

from __future__ import annotations

import pytest
from kubernetes.client import ApiClient

from guard.config import SandboxSettings
from guard.domain.exceptions import SandboxError
from guard.sandbox import kube_spec as spec
from tests.fakes.kube_pods import restricted_violations

pytestmark = pytest.mark.unit


def test_docker_sizes_become_kubernetes_quantities() -> None:
    assert [spec.quantity(s) for s in ("256m", "1g", "64k", "1048576", "1.5g")] == [
        "256Mi",
        "1Gi",
        "64Ki",
        "1048576",
        str(3 * 2**29),
    ]
    with pytest.raises(SandboxError, match="'lots'"):
        spec.quantity("lots")


def test_label_values_are_valid_whatever_the_incident_id() -> None:
    assert spec.label_value("incident #12 / api") == "incident--12---api"
    assert len(spec.label_value("x" * 100)) == 63
    assert spec.label_value("__") == "x"


def test_the_user_must_be_numeric_and_the_image_allowed() -> None:
    with pytest.raises(SandboxError, match=r"sandbox\.user 'nobody'.*65534:65534"):
        spec.numeric_user(SandboxSettings(user="nobody"))
    settings = SandboxSettings(image="toolbox:1", images=["busybox:1"])
    assert spec.check_image(settings, "busybox:1") == "busybox:1"
    with pytest.raises(SandboxError, match=r"add it to sandbox\.images"):
        spec.check_image(settings, "toolbox:2")


def test_the_pod_passes_restricted_admission_and_the_official_model() -> None:
    meta = spec.metadata("42", "shop-api", 60)
    pod = spec.pod_manifest(
        SandboxSettings(),
        name="guard-sbx-42-ab",
        meta=meta,
        image="guard-toolbox:latest",
        argv=["cat"],
        env={"A": "1"},
        secret_names=["TOKEN"],
        secret="guard-sbx-42-ab",
        stdin=True,
        workdir=None,
        timeout=60,
    )
    assert restricted_violations(pod) == []
    api = ApiClient()
    typed = api._ApiClient__deserialize(pod, "V1Pod")  # type: ignore[attr-defined]
    assert api.sanitize_for_serialization(typed) == pod  # every field is one the model knows
    assert typed.spec.containers[0].command == [
        "/bin/sh",
        "-c",
        'exec "$@" < /run/guard-stdin/stdin',
        "sh",
        "cat",
    ]
    assert typed.metadata.labels["guard.network"] == "shop-api"
    assert spec.secret_manifest("s", meta, {}, None) is None
