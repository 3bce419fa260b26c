"""The Kubernetes starter skills against their faults, under a real ``guard run`` watching the
tests' API server (tests/fakes/kube.py, with its kubelet's logs and events): a rollout to an
image that cannot be pulled (ImagePullBackOff), a container OOM-killed into CrashLoopBackOff,
and a rollout whose container crash-loops. Each question carries the pod's Warning events (and,
for a crash, the killed instance's last lines); once approved, ``k8s.rollback`` or
``k8s.rollout_restart`` reaches the API server, the controller (a thread of the test, as the
deployment controller and kubelet would) brings up ready pods of the resulting template, and
the kubernetes check that fired verifies it."""

from __future__ import annotations

import copy
import itertools
import json
import shutil
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import GuardHome
from tests.fakes.kube import REVISION, KubeServer, deployment, pod, serve_kube
from tests.fakes.kube_logs import crash, started, write_log
from tests.helpers.agent import (
    REPO,
    free_port,
    incidents,
    past_flap_window,
    running_guard,
    show,
    wait_for,
)

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]  # a guard run: placed with them

GOOD = {"shop/api:1.4.2"}  # the images that start; any other is the fault the test makes


class Cluster:
    """The API server's state and a controller that rolls out ready pods of a good template."""

    def __init__(self, kube: KubeServer) -> None:
        self.kube, self.st = kube, kube.state
        self.dep = self.st.add_deployment(deployment("api", image="shop/api:1.4.2", replicas=1))
        self.names = itertools.count(1)
        self.stop = threading.Event()
        self.seen = self._template()
        self.roll(ready=True)
        self.thread = threading.Thread(target=self._control, daemon=True)
        self.thread.start()

    def _template(self) -> str:
        with self.st.cond:
            return json.dumps(self.dep["spec"]["template"], sort_keys=True)

    def image(self) -> str:
        with self.st.cond:
            return str(self.dep["spec"]["template"]["spec"]["containers"][0]["image"])

    def roll(self, *, ready: bool, waiting: str | None = None) -> str:
        """Replace the pods by one of the current revision; its name."""
        with self.st.cond:
            revision = self.dep["metadata"]["annotations"][REVISION]
            [rs] = [
                r["metadata"]["name"]
                for r in self.st.replicasets.values()
                if r["metadata"]["annotations"][REVISION] == revision
            ]
            for ns, name in list(self.st.pods):
                self.st.delete_pod(ns, name)
            status = started() if ready else {**started(), "ready": False}
            status["image"] = self.image()
            if waiting:
                status["state"] = {"waiting": {"reason": waiting, "message": f"{waiting}: app"}}
                status.update(ready=False, started=False)
            name = f"{rs}-{next(self.names)}"
            self.st.put_pod(pod(name, rs=rs, ready=ready, statuses=[status]))
            return name

    def set_image(self, image: str) -> None:
        """``kubectl set image``: a new revision (the test makes its pods)."""
        with self.st.cond:
            self.dep["spec"]["template"]["spec"]["containers"][0]["image"] = image
            self.st._reconcile(self.dep)
            self.seen = json.dumps(self.dep["spec"]["template"], sort_keys=True)

    def _control(self) -> None:
        while not self.stop.wait(0.1):
            now = self._template()
            if now != self.seen:
                self.seen = now
                if self.image() in GOOD:
                    self.roll(ready=True)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    for kube in serve_kube():
        made = Cluster(kube)
        yield made
        made.stop.set()
        made.thread.join(5)


def asked(home: GuardHome, kind: str) -> dict[str, Any]:
    return wait_for(
        lambda: next(
            (i for i in incidents(home) if i["kind"] == kind and i["state"] == "awaiting_human"),
            None,
        ),
        60,
        f"the {kind} incident to ask a human",
    )


def approve(home: GuardHome, inc: dict[str, Any], skill: str) -> str:
    """Approve ``skill`` on the incident; once it resolved by it, the evidence it was asked
    with."""
    evidence = str(show(home, inc["id"])["details"]["evidence"])
    home.cli("approve", str(inc["id"]), "--skill", skill)
    wait_for(
        lambda: show(home, inc["id"])["state"] == "resolved", 90, f"#{inc['id']} healed by {skill}"
    )
    assert show(home, inc["id"])["details"]["resolved_by"] == skill
    wait_for(lambda: past_flap_window(home, inc["id"]), 30, "the flap window")
    return evidence


def test_image_pull_oom_and_crash_loop_are_shown_then_rolled_back_or_restarted(
    home: GuardHome, cluster: Cluster
) -> None:
    skills = home.root / "skills"
    for name in ("k8s-bad-rollout", "k8s-oom-killed"):
        shutil.copytree(REPO / "skills" / name, skills / name)
    home.write_config(
        {
            "http_host": "127.0.0.1",
            "http_port": free_port(),
            "kubernetes": {"kubeconfig": str(cluster.kube.kubeconfig(home.root)), "timeout": 5},
            "agent": {"verify_timeout": "20s", "poll_interval": "200ms", "settle": "1s"},
            "triage": {"flap_window": "1s"},
            "skills": {"git_author": "Guard Test <guard@test>"},
        }
    )
    home.playbook(
        "k8s",
        [{"id": "shop-pods", "type": "kubernetes", "namespace": "shop", "every": "1s"}],
    )
    with running_guard(home):
        # 1. a rollout to an image that is not there
        cluster.set_image("shop/api:1.5.0")
        bad = cluster.roll(ready=False, waiting="ImagePullBackOff")
        cluster.st.warning(bad, "Failed", 'Failed to pull image "shop/api:1.5.0": not found')
        evidence = approve(home, asked(home, "k8s_image_pull_failed"), "k8s-bad-rollout")
        assert f"$ k8s.events pod={bad} prefix=api" in evidence
        assert f'{bad} Failed x1: Failed to pull image "shop/api:1.5.0": not found' in evidence
        assert cluster.image() == "shop/api:1.4.2"

        # 2. the container of the rolled-back revision is OOM-killed and crash-loops
        [(ns, running)] = list(cluster.st.pods)
        write_log(cluster.st, ns, running, "app", "loading the catalogue into memory")
        crash(cluster.st, ns, running, "app", reason="OOMKilled", exit_code=137)
        cluster.st.warning(running, "BackOff", "Back-off restarting failed container app")
        before = copy.deepcopy(cluster.dep["spec"]["template"]["metadata"])
        evidence = approve(home, asked(home, "k8s_oom_killed"), "k8s-oom-killed")
        assert "loading the catalogue into memory" in evidence  # the killed instance's lines
        assert f"{running} BackOff x1: Back-off restarting failed container app" in evidence
        restarted = cluster.dep["spec"]["template"]["metadata"]
        assert restarted != before and "kubectl.kubernetes.io/restartedAt" in str(restarted)

        # 3. a rollout whose container exits at start
        cluster.set_image("shop/api:1.6.0")
        looping = cluster.roll(ready=True)
        write_log(cluster.st, "shop", looping, "app", "FATAL: SHOP_DB_URL is not set")
        crash(cluster.st, "shop", looping, "app")
        evidence = approve(home, asked(home, "k8s_crash_loop_back_off"), "k8s-bad-rollout")
        assert "FATAL: SHOP_DB_URL is not set" in evidence
        assert cluster.image() == "shop/api:1.4.2"
    print(evidence)
