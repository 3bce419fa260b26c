"""Hostile sandbox config (issue 13, finding 10): a root uid spelled another way, a grant of a
container runtime's or the kubelet's state, and a grant of Guard's own secrets are refused."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from guard.config import SandboxSettings
from guard.sandbox import ReadOnlyMount, SandboxGrants


@pytest.mark.parametrize(
    "user", ["00", "000:0", "+0", "0", "root", "65534:0", "0:65534", "1000:00", " 0", "1:2:3", ""]
)
def test_root_in_any_spelling_is_refused(user: str) -> None:
    with pytest.raises(ValidationError):
        SandboxSettings(user=user)


@pytest.mark.parametrize("user", ["65534:65534", "1000", "nobody", "1000:1000"])
def test_ordinary_users_pass(user: str) -> None:
    assert SandboxSettings(user=user).user == user


@pytest.mark.parametrize(
    "source",
    [
        "/var/lib/kubelet",
        "/var/lib/kubelet/pods/abc/volumes",
        "/var/lib/containers/storage",
        "/var/lib/cri-o",
        "/var/lib/rancher/k3s/agent/containerd",
        "/var/lib/containerd/io",
        "/run/secrets/kubernetes.io/serviceaccount",
        "/var/run/secrets/kubernetes.io/serviceaccount",
        "/var/run/secrets/eks.amazonaws.com/serviceaccount",
        "/run/secrets",
        "/etc/kubernetes",
        "/run/crio",
        "/run/podman",
        "/run/k3s/containerd",
    ],
)
def test_runtime_and_kubelet_state_and_tokens_are_refused(source: str) -> None:
    with pytest.raises(ValidationError):
        ReadOnlyMount(source=source, target="/x")


@pytest.mark.parametrize(
    "name",
    [
        "GUARD_TELEGRAM__BOT_TOKEN",
        "GUARD_RAILWAY__TOKEN",
        "guard_llm__api_key",
        "GUARD_DATABASE_URL",
        "GUARD_CONFIG",
    ],
)
def test_guards_own_secrets_are_not_grantable(name: str) -> None:
    with pytest.raises(ValidationError) as exc:
        SandboxGrants(secrets=[name])
    assert "Guard's own configuration" in str(exc.value)


@pytest.mark.parametrize("name", ["DATABASE_URL", "GUARD_TEST_DB_PASSWORD"])
def test_other_secrets_are_grantable(name: str) -> None:
    assert SandboxGrants(secrets=[name]).secrets == [name]
