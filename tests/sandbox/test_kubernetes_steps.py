"""The ``kubernetes`` backend against the fake API server and its kubelet (tests/fakes/kube_pods.py):
the manifests it submits, and bad input (issue 42, what must be shown 5): a pod that never
starts, a pod deleted mid-step, an API answering 429/500 or stalling, a 10 MB log, a Guard
killed with ``kill -9``. Each ends in a clear step result or ``SandboxError``, nothing left.
The shared contract (timeouts, caps, redaction, grants) is tests/contracts/test_sandbox_contract.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient

from guard.config import KubernetesSettings, SandboxSettings
from guard.domain.exceptions import KubernetesError, SandboxError
from guard.k8s.client import KubeClient
from guard.sandbox import SandboxGrants, WarmSandboxPool, create_sandbox
from guard.sandbox.kinds import resolve_backend
from guard.sandbox.kubernetes import KubeSandbox, sandbox_namespace
from tests.helpers.kube_sandbox import NAMESPACE, Cluster, fake_cluster
from tests.helpers.sandbox import TEST_PREFIX

pytestmark = pytest.mark.docker
TOKEN = "KUBE_STEP_TOKEN"
SECRET = "s3cr3t-kube-value"


@pytest.fixture
def cluster(sbx_client: Any, sbx_busybox_image: str, tmp_path: Path) -> Iterator[Cluster]:
    with fake_cluster(sbx_client, tmp_path) as made:
        yield made


@pytest.fixture
def settings(sbx_busybox_image: str) -> SandboxSettings:
    return SandboxSettings(
        backend="kubernetes", namespace=NAMESPACE, image=sbx_busybox_image, timeout=20
    )


def sandbox(
    settings: SandboxSettings, cluster: Cluster, incident: str, **grants: Any
) -> KubeSandbox:
    made = create_sandbox(
        settings,
        incident_id=incident,
        grants=SandboxGrants(**grants),
        environ={TOKEN: SECRET},
        cluster=cluster.settings,
    )
    assert isinstance(made, KubeSandbox)
    return made


def model(doc: dict[str, Any], kind: str) -> Any:
    """``doc`` as the official client's model; it must survive the round trip whole (a field
    the model does not know would be dropped, so a misspelt field fails here)."""
    api = ApiClient()
    typed = api._ApiClient__deserialize(doc, kind)  # type: ignore[attr-defined]
    assert api.sanitize_for_serialization(typed) == doc
    return typed


def incident(name: str) -> str:
    return f"{TEST_PREFIX}{name}"


async def test_the_pod_and_secret_it_submits_are_restricted_valid_and_hold_no_secret(
    settings: SandboxSettings, cluster: Cluster
) -> None:
    box = sandbox(settings, cluster, incident("spec"), secrets=[TOKEN])
    result = await box.run(
        ["sh", "-c", 'cat; echo "$GREETING $KUBE_STEP_TOKEN"'], stdin="in\n", env={"GREETING": "hi"}
    )
    assert result.ok and result.stdout == f"in\nhi [REDACTED:{TOKEN}]\n", result
    [posted] = [r.body for r in cluster.server.sent("POST", f"/namespaces/{NAMESPACE}/pods")]
    pod = model(posted, "V1Pod").spec
    assert SECRET not in json.dumps(posted)  # the secret is a reference, never a literal
    assert pod.automount_service_account_token is False and pod.restart_policy == "Never"
    assert pod.active_deadline_seconds >= settings.timeout
    assert pod.security_context.run_as_non_root and pod.security_context.run_as_user != 0
    assert pod.security_context.seccomp_profile.type == "RuntimeDefault"
    [c] = pod.containers
    sc = c.security_context
    assert (sc.allow_privilege_escalation, sc.read_only_root_filesystem) == (False, True)
    assert sc.capabilities.drop == ["ALL"] and not sc.privileged
    assert set(c.resources.limits) == {"cpu", "memory", "ephemeral-storage"}
    assert c.command[-3:] == ["sh", "-c", 'cat; echo "$GREETING $KUBE_STEP_TOKEN"']  # argv
    [ref] = [e.value_from.secret_key_ref for e in c.env if e.name == TOKEN]
    labels = posted["metadata"]["labels"]
    assert labels["guard.sandbox"] == "1" and labels["guard.incident"] == incident("spec")
    assert labels["guard.owner"] and labels["guard.pid"] == str(os.getpid())
    [secret] = [r.body for r in cluster.server.sent("POST", "/secrets")]
    assert model(secret, "V1Secret").metadata.name == ref.name
    # the secret went with its pod
    assert [r.path.rsplit("/", 2)[1] for r in cluster.server.sent("DELETE")] == ["pods", "secrets"]
    assert cluster.leftovers(incident("spec")) == []


async def test_admission_refuses_a_pod_that_breaks_restricted_naming_the_field(
    settings: SandboxSettings, cluster: Cluster
) -> None:
    assert (await sandbox(settings, cluster, incident("adm")).run("true")).ok
    [posted] = [r.body for r in cluster.server.sent("POST", "/pods")]
    posted["metadata"]["name"] += "-loose"
    del posted["spec"]["containers"][0]["securityContext"]["allowPrivilegeEscalation"]
    kube = KubeClient(cluster.settings)
    with pytest.raises(KubernetesError) as refused:
        kube.create_pod(NAMESPACE, posted)
    kube.close()
    assert refused.value.status == 403
    assert (
        'is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false'
        ' (container "step" must set securityContext.allowPrivilegeEscalation=false)'
    ) in str(refused.value)


async def test_an_image_off_the_allowlist_or_a_host_mount_is_refused_before_any_pod(
    settings: SandboxSettings, cluster: Cluster, tmp_path: Path
) -> None:
    with pytest.raises(SandboxError, match=r"not allowed .*sandbox\.images"):
        create_sandbox(
            settings, incident_id=incident("img"), image="evil:latest", cluster=cluster.settings
        )
    mount = {"source": str(tmp_path), "target": "/srv/logs"}
    with pytest.raises(SandboxError, match="mounts no host paths"):
        sandbox(settings, cluster, incident("img"), mounts=[mount])
    assert cluster.server.sent("POST") == []


def test_the_namespace_defaults_to_the_kubeconfig_contexts(
    settings: SandboxSettings, cluster: Cluster, tmp_path: Path
) -> None:
    unset = settings.model_copy(update={"namespace": None})
    assert sandbox_namespace(unset, cluster.settings) == "shop"  # the fake's context
    assert sandbox_namespace(settings, cluster.settings) == NAMESPACE  # the setting wins
    nowhere = KubernetesSettings(kubeconfig=tmp_path / "missing")
    with pytest.raises(SandboxError, match=r"set sandbox\.namespace"):
        sandbox_namespace(unset, nowhere)


async def test_a_pod_that_never_starts_is_a_clear_error_at_once(
    settings: SandboxSettings, cluster: Cluster
) -> None:
    absent = "guard-test-absent:never"  # allowed, but no registry has it
    allowed = settings.model_copy(update={"image": absent})
    t0 = time.monotonic()
    with pytest.raises(SandboxError, match=r"cannot start: (ErrImagePull|ImagePullBackOff).*"):
        await sandbox(allowed, cluster, incident("pull")).run("true")
    assert time.monotonic() - t0 < 5  # not the step's 20 s budget
    assert cluster.leftovers(incident("pull")) == []


async def test_a_pod_deleted_mid_step_is_a_clear_error(
    settings: SandboxSettings, cluster: Cluster
) -> None:
    box = sandbox(settings, cluster, incident("gone"), secrets=[TOKEN])
    step = asyncio.create_task(box.run("echo started; sleep 30"))
    kube = KubeClient(cluster.settings)
    for _ in range(100):
        running = [
            p["metadata"]["name"]
            for p in kube.list_pods(NAMESPACE, None)["items"]
            if p["status"].get("phase") == "Running"
        ]
        if running:
            break
        await asyncio.sleep(0.1)
    kube.delete_now("pod", NAMESPACE, running[0])  # kubectl delete pod, an eviction
    kube.close()
    with pytest.raises(SandboxError, match="was deleted during the command"):
        await asyncio.wait_for(step, 10)
    assert cluster.leftovers(incident("gone")) == []


async def test_an_api_answering_429_500_or_stalling_is_retried_within_the_budget(
    settings: SandboxSettings, cluster: Cluster, tmp_path: Path
) -> None:
    slow = KubernetesSettings(kubeconfig=cluster.settings.kubeconfig, timeout=1)
    cluster.kubelet.fail(429, 2, "/pods", "POST")
    cluster.kubelet.fail(500, 2, "/secrets", "POST")
    cluster.kubelet.stall(2.5, 1, "/pods/", "GET")  # longer than the client's 1 s timeout
    box = create_sandbox(
        settings,
        incident_id=incident("flaky"),
        cluster=slow,
        grants=SandboxGrants(secrets=[TOKEN]),
        environ={TOKEN: SECRET},
    )
    result = await box.run("echo through")
    assert result.ok and result.stdout == "through\n"
    assert cluster.leftovers(incident("flaky")) == []

    cluster.kubelet.fail(500, 10_000, "/pods", "POST")  # down for good
    t0 = time.monotonic()
    with pytest.raises(SandboxError, match=r"could not create its pod in the cluster: .*500"):
        await box.run("echo never", timeout=3)
    assert time.monotonic() - t0 < 6
    assert cluster.leftovers(incident("flaky")) == []


async def test_a_10_mb_log_is_capped_as_output_is(
    settings: SandboxSettings, cluster: Cluster
) -> None:
    box = sandbox(settings, cluster, incident("big"))
    result = await box.run("head -c 10000000 /dev/zero | tr '\\0' x")
    assert result.ok
    assert result.stdout_truncated == 10_000_000 - settings.output_limit
    assert (
        result.stdout.startswith("x" * settings.output_limit) and "[... truncated" in result.stdout
    )
    assert cluster.leftovers(incident("big")) == []


async def test_a_network_grant_selects_the_named_policy(
    settings: SandboxSettings, cluster: Cluster
) -> None:
    with pytest.raises(SandboxError, match="no NetworkPolicy 'shop-api' in namespace"):
        await sandbox(settings, cluster, incident("net"), network="shop-api").run("true")
    cluster.kubelet.policies[(NAMESPACE, "shop-api")] = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "shop-api", "namespace": NAMESPACE},
        "spec": {"podSelector": {"matchLabels": {"guard.network": "shop-api"}}},
    }
    assert (await sandbox(settings, cluster, incident("net"), network="shop-api").run("true")).ok
    [posted] = [r.body for r in cluster.server.sent("POST", "/pods")]
    assert posted["metadata"]["labels"]["guard.network"] == "shop-api"


KILLED = """
import asyncio, sys
from guard.config import KubernetesSettings, SandboxSettings
from guard.sandbox import SandboxGrants, create_sandbox
settings = SandboxSettings(backend="kubernetes", namespace=sys.argv[2], image=sys.argv[3])
box = create_sandbox(settings, incident_id=sys.argv[4], grants=SandboxGrants(secrets=["T"]),
                     environ={"T": "x" * 12}, cluster=KubernetesSettings(kubeconfig=sys.argv[1]))
asyncio.run(box.run("sleep 300"))
"""


async def test_what_a_guard_killed_with_kill_9_left_is_reaped_at_start(
    settings: SandboxSettings, cluster: Cluster
) -> None:
    name = incident("killed")
    kubeconfig = str(cluster.settings.kubeconfig)
    guard = await asyncio.create_subprocess_exec(
        sys.executable, "-c", KILLED, kubeconfig, NAMESPACE, settings.image, name
    )
    try:
        for _ in range(400):  # until its pod runs (the kubelet made its container)
            if any(x.startswith("container/") for x in cluster.leftovers(name)):
                break
            await asyncio.sleep(0.05)
    finally:
        guard.send_signal(signal.SIGKILL)
        await guard.wait()
    assert {x.split("/")[0] for x in cluster.leftovers(name)} == {"pod", "secret", "container"}
    live = sandbox(settings, cluster, incident("alive"))  # a live Guard's step is spared
    running = asyncio.create_task(live.run("sleep 2; echo done"))
    await asyncio.sleep(1)
    pool = WarmSandboxPool(settings, cluster=cluster.settings)
    assert await pool.reap() == 2  # the dead one's pod and secret
    assert cluster.leftovers(name) == []
    assert (await running).stdout == "done\n"


async def test_auto_picks_an_isolating_backend_that_works_never_local(
    settings: SandboxSettings, cluster: Cluster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    auto = settings.model_copy(update={"backend": "auto"})
    assert resolve_backend(auto, cluster.settings).name == "docker"  # the engine answers
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    assert resolve_backend(auto, cluster.settings).name == "kubernetes"
    nowhere = KubernetesSettings(kubeconfig=tmp_path / "missing-kubeconfig")
    with pytest.raises(SandboxError) as none:
        resolve_backend(auto, nowhere)
    assert str(none.value).startswith(
        "sandbox: none (no Docker engine, no cluster): shell steps cannot run here"
    )
    assert "never picks local" in str(none.value)


async def test_guard_sandbox_run_runs_a_step_pod_with_no_engine(
    settings: SandboxSettings, cluster: Cluster, tmp_path: Path
) -> None:
    config = tmp_path / "guard.yaml"
    config.write_text(
        f"sandbox: {{backend: auto, namespace: {NAMESPACE}, image: {settings.image}}}\n"
        f"kubernetes: {{kubeconfig: {cluster.settings.kubeconfig}}}\n"
    )
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"}
    env.pop("GUARD_CONFIG", None)
    guard = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "guard.cli",
        "sandbox",
        "run",
        "--config",
        str(config),
        "--",
        "sh",
        "-c",
        "echo from a pod; exit 4",
        cwd=tmp_path,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(guard.communicate(), 60)
    assert (guard.returncode, out) == (4, b"from a pod\n"), err
    assert cluster.server.sent("POST", f"/namespaces/{NAMESPACE}/pods")
