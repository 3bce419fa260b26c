"""Kubernetes end to end: the official client against a local API server (tests/fakes/kube.py).

The monitor follows the real watch protocol (chunked newline-delimited JSON, resourceVersion
resumption, 410 Gone), and the actions are checked by the exact requests the server received.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

from sqlmodel import select

from guard.actions.base import ActionContext
from guard.actions.registry import ActionRegistry
from guard.app import Guard
from guard.config import Settings
from guard.domain.records import Observation
from guard.monitors.kubernetes import KubernetesMonitor
from guard.playbooks.models import KubernetesMonitorSpec
from guard.store.models import Incident
from tests.fakes.kube import KubeServer, container_status, deployment, pod

CRASHLOOP = [container_status(waiting="CrashLoopBackOff", last_terminated="Error", restarts=4)]


def kube_home(home: Any, kube: KubeServer, every: str = "1h", **spec: Any) -> Settings:
    home.write_config({"kubernetes": {"kubeconfig": str(kube.kubeconfig(home.root)), "timeout": 5}})
    home.playbook(
        "k8s",
        [
            {
                "id": "shop-pods",
                "type": "kubernetes",
                "namespace": "shop",
                "selector": "app=api",
                "every": every,
                **spec,
            }
        ],
    )
    return home.settings()


def incidents(home: Any, kind: str | None = None) -> list[Incident]:
    with home.database().session() as s:
        return [i for i in s.exec(select(Incident)).all() if kind is None or i.kind == kind]


async def wait_until(predicate: Any, within: float = 10.0) -> Any:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if result := predicate():
            return result
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached")


async def test_crashloop_from_the_watch_opens_incident_and_rollout_restart_heals(home, kube):
    kube.state.add_deployment(deployment("api"))
    kube.state.put_pod(pod("api-7d9f8b6c5d-x2k4p"))
    settings = kube_home(home, kube, every="1h")  # polling cannot explain the detection
    guard = Guard(settings, home.playbooks_loaded())
    task = asyncio.create_task(guard.run())
    try:
        await wait_until(lambda: kube.watch_connections >= 1)
        broke_at = time.monotonic()
        kube.state.put_pod(pod("api-7d9f8b6c5d-x2k4p", ready=False, statuses=CRASHLOOP))
        [inc] = await wait_until(lambda: incidents(home, "k8s_crash_loop_back_off"))
        print(f"watch detection latency: {(time.monotonic() - broke_at) * 1000:.0f} ms")
        assert inc.target == "shop/api" and inc.source == "kubernetes"
        assert inc.details["pod"] == "api-7d9f8b6c5d-x2k4p"
        assert inc.details["deployment"] == "api" and inc.details["restart_count"] == 4
        lists = [r for r in kube.sent("GET", "/pods") if not r.path.endswith("/log")]
        assert len(lists) == 3  # check's list, follow's list, the watch
        [log] = kube.sent("GET", "/log")  # the crashed instance's last lines, asked for once
        assert log.query["previous"] == "true" and log.query["tailLines"] == "50"

        result = (
            await ActionRegistry()
            .get("k8s.rollout_restart")
            .run({}, ActionContext(settings, incident={"details": inc.details}))
        )
        assert result.ok, result
        [patch] = kube.sent("PATCH")
        assert patch.path == "/apis/apps/v1/namespaces/shop/deployments/api"
        assert patch.content_type == "application/strategic-merge-patch+json"
        assert patch.query == {"fieldManager": "guard"}  # managedFields name Guard, not kubectl
        stamp = patch.body["spec"]["template"]["metadata"]["annotations"][
            "kubectl.kubernetes.io/restartedAt"
        ]
        assert patch.body == {
            "spec": {
                "template": {
                    "metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": stamp}}
                }
            }
        }
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", stamp)
        assert (
            kube.state.deployments[("shop", "api")]["spec"]["template"]["metadata"]["annotations"][
                "kubectl.kubernetes.io/restartedAt"
            ]
            == stamp
        )

        # The controller replaces the pod; the watch sees the workload healthy again.
        kube.state.put_pod(pod("api-5c8d7f9b4a-q7w2e", rs="api-5c8d7f9b4a"))
        kube.state.delete_pod("shop", "api-7d9f8b6c5d-x2k4p")
        await wait_until(lambda: incidents(home, "k8s_crash_loop_back_off")[0].state == "resolved")
    finally:
        guard.stop()
        await task


def monitor_for(home: Any, kube: KubeServer) -> KubernetesMonitor:
    settings = kube_home(home, kube)
    spec = KubernetesMonitorSpec(
        id="shop-pods", type="kubernetes", namespace="shop", selector="app=api"
    )
    return KubernetesMonitor(spec, settings, watch_timeout=30)


async def follow_collecting(monitor: KubernetesMonitor) -> tuple[list[Any], asyncio.Task[None]]:
    seen: list[Any] = []

    async def emit(obs: Observation) -> None:
        seen.extend(obs.signals)

    return seen, asyncio.create_task(monitor.follow(emit))


async def test_dropped_watch_resumes_without_missing_or_repeating_events(home, kube):
    kube.state.put_pod(pod("api-7d9f8b6c5d-x2k4p"))
    monitor = monitor_for(home, kube)
    kube.drop_next_watch_after = 2  # the first watch connection is cut after two events
    seen, task = await follow_collecting(monitor)
    try:
        await wait_until(lambda: kube.watch_connections >= 1)
        versions = []
        for restarts in range(1, 6):
            statuses = [
                container_status(
                    waiting="CrashLoopBackOff", last_terminated="Error", restarts=restarts
                )
            ]
            obj = kube.state.put_pod(pod("api-7d9f8b6c5d-x2k4p", ready=False, statuses=statuses))
            versions.append(obj["metadata"]["resourceVersion"])
        await wait_until(lambda: len([s for s in seen if s.status == "firing"]) >= 5)
        await asyncio.sleep(0.3)  # anything repeated would arrive by now
        firing = [s for s in seen if s.status == "firing"]
        assert [s.details["resource_version"] for s in firing] == versions
        assert [s.details["restart_count"] for s in firing] == [1, 2, 3, 4, 5]
        watches = [r for r in kube.sent("GET", "/pods") if r.query.get("watch") == "true"]
        assert len(watches) == 2 and monitor.reconnects == 1
        assert watches[1].query["resourceVersion"] == versions[1]  # resumed after the 2nd
        assert monitor.relists == 0
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_expired_resource_version_relists_then_watches_again(home, kube):
    kube.state.put_pod(pod("api-7d9f8b6c5d-x2k4p"))
    monitor = monitor_for(home, kube)
    kube.drop_next_watch_after = 1
    seen, task = await follow_collecting(monitor)
    try:
        await wait_until(lambda: kube.watch_connections >= 1)
        kube.state.put_pod(pod("api-7d9f8b6c5d-x2k4p", ready=False, statuses=CRASHLOOP))
        await wait_until(lambda: any(s.kind == "k8s_crash_loop_back_off" for s in seen))
        kube.state.expire_history()  # compaction: the watch's resourceVersion is gone
        oom = [
            container_status(
                waiting="CrashLoopBackOff", last_terminated="OOMKilled", exit_code=137, restarts=5
            )
        ]
        kube.state.put_pod(pod("api-7d9f8b6c5d-x2k4p", ready=False, statuses=oom))
        # The cut connection resumes, gets ERROR 410 Expired, lists again: the OOM is not lost.
        await wait_until(lambda: any(s.kind == "k8s_oom_killed" for s in seen))
        assert monitor.relists == 1
        pod_lists = [r for r in kube.sent("GET", "/pods") if r.path.endswith("/pods")]
        pod_lists = [r for r in pod_lists if "watch" not in r.query]
        assert len(pod_lists) == 2
        watches = [r for r in kube.sent("GET", "/pods") if r.query.get("watch") == "true"]
        await wait_until(
            lambda: (
                len([r for r in kube.sent("GET", "/pods") if r.query.get("watch") == "true"]) >= 3
            )
        )
        watches = [r for r in kube.sent("GET", "/pods") if r.query.get("watch") == "true"]
        assert int(watches[-1].query["resourceVersion"]) >= kube.state.compacted
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_http_410_on_watch_start_relists(home, kube):
    kube.state.put_pod(pod("api-7d9f8b6c5d-x2k4p", ready=False, statuses=CRASHLOOP))
    monitor = monitor_for(home, kube)
    monitor._rv = "101"  # resuming from a version the server no longer has
    kube.gone_next_watch_http = True
    seen, task = await follow_collecting(monitor)
    try:
        await wait_until(lambda: any(s.kind == "k8s_crash_loop_back_off" for s in seen))
        assert monitor.relists == 1
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_unreachable_api_is_a_monitor_error_not_a_crash(home, kube):
    settings = kube_home(home, kube)
    kube.stop()
    events = await Guard(settings, home.playbooks_loaded()).run_once()
    assert [e.type for e in events] == ["opened"]
    [err] = incidents(home, "monitor_error")
    assert "cannot reach the Kubernetes API at http://127.0.0.1:" in err.message
