"""``type: resources`` with ``pods:``: a container's memory against its limit and its CPU from
the metrics API (``metrics.k8s.io/v1beta1``, served by the tests' API server as metrics-server
does), a trend to the limit, and where no metrics API is served, restart counts from container
status. The fixture checks every request against deploy/kubernetes/rbac.yaml."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from guard.monitors.resources import ResourcesMonitor
from guard.playbooks.models import Playbook, ResourcesMonitorSpec
from tests.conftest import GuardHome
from tests.fakes.kube import KubeServer, pod
from tests.fakes.kube_logs import started
from tests.fakes.kube_metrics import put_usage

NAME = "api-7d9f8b6c5d-x2k4p"


@pytest.fixture
def kube() -> Iterator[KubeServer]:
    from tests.fakes.kube import serve_kube

    yield from serve_kube()


def monitor(home: GuardHome, kube: KubeServer, **fields: Any) -> ResourcesMonitor:
    home.write_config({"kubernetes": {"kubeconfig": str(kube.kubeconfig(home.root)), "timeout": 5}})
    entry = {"id": "api-usage", "type": "resources", "pods": {"namespace": "shop"}, **fields}
    entry["pods"]["selector"] = "app=api"
    [spec] = Playbook.model_validate({"name": "t", "monitors": [entry]}).monitors
    assert isinstance(spec, ResourcesMonitorSpec)
    return ResourcesMonitor(spec, home.settings())


def api_pod(restarts: int = 0) -> dict[str, Any]:
    obj = pod(NAME, statuses=[started("app", restarts=restarts)])
    obj["spec"]["containers"][0]["resources"] = {"limits": {"memory": "128Mi", "cpu": "500m"}}
    return obj


async def test_memory_and_cpu_come_from_the_metrics_api_against_the_limits(
    home: GuardHome, kube: KubeServer
) -> None:
    kube.state.put_pod(api_pod())
    put_usage(kube.state, "shop", NAME, "app", cpu="250m", memory="40Mi")
    watch = monitor(home, kube, memory={"above": "90%"}, cpu={"above": "80%"})
    try:
        [ok] = (await watch.check({})).signals
        assert (ok.status, ok.kind, ok.target) == ("ok", "resources_ok", f"shop/{NAME}/app")
        assert ok.message == "restarts 0; memory 40 MiB of 128 MiB (31 %); cpu 25 %"
        put_usage(kube.state, "shop", NAME, "app", cpu="900m", memory="120Mi")
        signals = (await watch.check({})).signals
        assert sorted((s.kind, s.status) for s in signals) == [
            ("cpu_high", "firing"),
            ("memory_high", "firing"),
        ]
        [mem] = [s for s in signals if s.kind == "memory_high"]
        assert mem.source == "resources" and mem.target == f"shop/{NAME}/app"
        assert mem.message == "memory 120 MiB of 128 MiB (94 %): above 90 %"
        assert mem.details["pod"] == NAME and mem.details["container"] == "app"
    finally:
        await watch.close()
    assert kube.sent("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods")


async def test_a_rising_container_is_predicted_from_the_metrics_api(
    home: GuardHome, kube: KubeServer
) -> None:
    kube.state.put_pod(api_pod())
    watch = monitor(home, kube, trend={"window": "1m", "within": "10m"})
    signals: list[Any] = []
    for i in range(6):  # 2 MiB per check, each 5 s apart: the monitor is given the times
        put_usage(kube.state, "shop", NAME, "app", cpu="10m", memory=f"{40 + 2 * i}Mi")
        samples = await asyncio.to_thread(watch._sample)
        signals = watch.judge(samples, 5.0 * i)
    await watch.close()
    [fired] = [s for s in signals if s.status == "firing"]
    assert fired.kind == "memory_high"
    assert fired.message == (
        "memory 50 MiB of 128 MiB (39 %), rising 0.4 MB/s: reaches the limit in 3 min"
    )


async def test_without_a_metrics_api_restarts_come_from_container_status(
    home: GuardHome, kube: KubeServer
) -> None:
    kube.state.put_pod(api_pod(restarts=4))
    watch = monitor(home, kube, restarts={"above": 3}, memory={"above": "90%"})
    try:
        [fired] = (await watch.check({})).signals
    finally:
        await watch.close()
    assert (fired.kind, fired.status) == ("restarts_high", "firing")
    assert fired.message == "restarts 4: above 3"
    assert fired.details["metrics"] == "absent"


async def test_a_cluster_guard_cannot_reach_is_a_monitor_error(home: GuardHome) -> None:
    from guard.domain.exceptions import MonitorError

    missing = home.root / "no-kubeconfig"
    home.write_config({"kubernetes": {"kubeconfig": str(missing), "timeout": 2}})
    entry = {"id": "api-usage", "type": "resources", "pods": {"namespace": "shop"}}
    entry["restarts"] = {"above": 3}
    [spec] = Playbook.model_validate({"name": "t", "monitors": [entry]}).monitors
    assert isinstance(spec, ResourcesMonitorSpec)
    watch = ResourcesMonitor(spec, home.settings())
    with pytest.raises(MonitorError, match="no-kubeconfig"):
        await watch.check({})
    await watch.close()
