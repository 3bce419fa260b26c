"""Guard where it is deployed on Kubernetes (issue 42): a real ``guard run`` with no Docker
engine, its sandbox the ``kubernetes`` backend against the tests' API server (whose kubelet runs
each step pod). A failing HTTP check's shell diagnostic runs as a step pod; a human sends
``probe.http`` (evidence) and then ``k8s.rollout_restart`` (the fix), which is verified and
learned; the next fault is healed by the learned skill with no question."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import GuardHome
from tests.fakes.kube import deployment
from tests.helpers.agent import find, free_port, incidents, running_guard, show, wait_for
from tests.helpers.images import ensure_busybox_image
from tests.helpers.kube_sandbox import NAMESPACE, Cluster, fake_cluster
from tests.helpers.nowhere import NOWHERE
from tests.helpers.sandbox import BUSYBOX_IMAGE
from tests.helpers.telegram import Service

pytestmark = pytest.mark.docker
RESTARTED = "kubectl.kubernetes.io/restartedAt"


@pytest.fixture
def cluster(docker_client: Any, home: GuardHome) -> Iterator[Cluster]:
    ensure_busybox_image(docker_client, BUSYBOX_IMAGE)
    with fake_cluster(docker_client, home.root) as made:
        made.server.state.add_deployment(deployment("api"))
        yield made


def controller(cluster: Cluster, svc: Service, stop: threading.Event) -> None:
    """The rollout's effect: a new restartedAt stamp brings the service back."""
    seen: set[str] = set()
    while not stop.wait(0.1):
        with cluster.server.state.cond:
            spec = cluster.server.state.deployments[("shop", "api")]["spec"]
            stamp = (spec["template"].get("metadata") or {}).get("annotations", {}).get(RESTARTED)
        if stamp and stamp not in seen:
            seen.add(stamp)
            svc.healthy = True


@pytest.mark.timeout(300)
def test_a_human_fix_on_kubernetes_is_learned_and_heals_the_next_fault(
    home: GuardHome, cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", NOWHERE)  # no engine where Guard runs
    svc = Service()
    port = int(svc.base.rsplit(":", 1)[1])
    home.write_config(
        {
            "http_host": "127.0.0.1",
            "http_port": free_port(),
            "kubernetes": {"kubeconfig": str(cluster.settings.kubeconfig)},
            "sandbox": {"backend": "kubernetes", "namespace": NAMESPACE, "image": BUSYBOX_IMAGE},
            "probes": {"allow": [{"host": "127.0.0.1", "ports": [port]}]},
            "agent": {"verify_timeout": "10s", "poll_interval": "200ms", "settle": "1s"},
            "skills": {"git_author": "Guard Test <guard@test>", "learned_trust": "trusted"},
        }
    )
    check = {"id": "web", "type": "http", "url": f"{svc.base}/healthz", "every": "1s"}
    home.playbook("web", [check])
    (home.playbooks / "web.yaml").write_text(
        (home.playbooks / "web.yaml").read_text()
        + "diagnostics:\n  - run: echo diagnosed in a step pod\n"
    )
    stop = threading.Event()
    watcher = threading.Thread(target=controller, args=(cluster, svc, stop), daemon=True)
    watcher.start()
    try:
        with running_guard(home):
            inc = wait_for(
                lambda: find(home, monitor_id="web", state="awaiting_human"),
                120,
                "the failing check to ask a human",
            )
            evidence = show(home, inc["id"])
            assert "diagnosed in a step pod" in str(evidence), evidence
            assert cluster.server.sent("POST", f"/namespaces/{NAMESPACE}/pods")

            probed = home.cli("reply", str(inc["id"]), "--", f"probe.http {svc.base}/healthz")
            assert "503" in probed.stdout, probed.stdout
            fixed = home.cli(
                "reply",
                str(inc["id"]),
                "--wait",
                "60",
                "--",
                "k8s.rollout_restart api namespace=shop",
            )
            assert "verified" in fixed.stdout.lower(), fixed.stdout
            wait_for(lambda: show(home, inc["id"])["state"] == "resolved", 60, "the fix to verify")
            skills = home.cli("skills", "list", "--json").stdout
            assert "k8s.rollout_restart" in skills or "learned" in skills, skills

            svc.healthy = False  # the same fault again: the learned skill, no question
            wait_for(
                lambda: (
                    len(cluster.server.sent("PATCH")) == 2
                    and all(i["state"] == "resolved" for i in incidents(home))
                ),
                120,
                "the learned skill to heal the second fault",
            )
            timelines = [show(home, i["id"])["timeline"] for i in incidents(home)]
            asked = [t for tl in timelines for t in tl if t["type"] == "asked_human"]
            assert len(asked) == 1, asked  # only the first fault was a question
            said = [str(t.get("message")) for tl in timelines for t in tl]
            assert any("healed by skill learned-" in m for m in said), said
    finally:
        stop.set()
        watcher.join(5)
        svc.server.shutdown()
