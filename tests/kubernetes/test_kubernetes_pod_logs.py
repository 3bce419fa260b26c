"""Pod logs: ``logs:`` rules over the selected pods' containers (a crash's last lines are in
test_kubernetes_crash_logs.py).

Against the local API server's log endpoint (tests/fakes/kube_logs.py): ``follow`` streams chunked
text with RFC 3339 timestamps, ``sinceTime`` has whole-second precision, ``previous=true`` is
the instance that died. Positions are stored like the Docker log monitor's and a restart counts
nothing twice, even lines at the same nanosecond.
"""

from __future__ import annotations

import asyncio
import time
import tracemalloc
from collections.abc import Iterator

import pytest

from guard.app import Guard
from guard.config import KubernetesSettings
from guard.domain.exceptions import KubernetesError
from guard.k8s.client import KubeClient
from guard.monitors import kubernetes_logs
from guard.monitors.kubernetes_logs import since_time, split_lines
from guard.playbooks.models import KubernetesMonitorSpec
from tests.fakes.kube import pod
from tests.fakes.kube_logs import crash, start_again, started, write_log
from tests.helpers.kube_logs import (
    POD,
    RULES,
    Collected,
    following,
    log_requests,
    monitor_for,
    stop,
)
from tests.kubernetes.test_kubernetes import incidents, kube_home, wait_until


async def test_a_matching_line_opens_an_incident_on_the_pod_container(home, kube):
    kube.state.put_pod(pod(POD, statuses=[started("app")]))
    write_log(kube.state, "shop", POD, "app", "ERROR written before Guard started")
    settings = kube_home(home, kube, every="1h", logs=RULES)
    guard = Guard(settings, home.playbooks_loaded())
    task = asyncio.create_task(guard.run())
    try:
        await wait_until(lambda: log_requests(kube, follow="true"), within=30)
        write_log(kube.state, "shop", POD, "app", "INFO charge ok", "ERROR payment gateway timeout")
        [inc] = await wait_until(lambda: incidents(home, "payment_timeout"), within=30)
        assert inc.target == f"shop/{POD}/app" and inc.source == "kubernetes"
        assert inc.details["pod"] == POD and inc.details["container"] == "app"
        assert inc.details["deployment"] == "api" and inc.details["namespace"] == "shop"
        assert inc.message == "ERROR payment gateway timeout" and "stream" not in inc.details
        assert incidents(home, "app_error") == []  # the line before Guard started: not counted
        [req] = log_requests(kube, follow="true")
        assert req.path == f"/api/v1/namespaces/shop/pods/{POD}/log"
        assert req.query["container"] == "app" and req.query["timestamps"] == "true"
        assert req.query["sinceTime"].endswith("Z") and len(req.query["sinceTime"]) == 20
    finally:
        guard.stop()
        await task


async def test_a_restart_resumes_with_since_time_and_counts_nothing_twice(home, kube):
    kube.state.put_pod(pod(POD, statuses=[started("app")]))
    settings = kube_home(home, kube, every="1h", logs=RULES)

    def db_errors() -> int:
        found = incidents(home, "app_error")
        return found[0].count if found else 0

    guard = Guard(settings, home.playbooks_loaded())
    task = asyncio.create_task(guard.run())
    try:
        await wait_until(lambda: log_requests(kube, follow="true"), within=30)
        # two lines at one nanosecond: a position is a timestamp and how many lines had it
        stamp = time.time_ns()
        write_log(kube.state, "shop", POD, "app", "ERROR db down", "ERROR db down", at=stamp)
        await wait_until(lambda: db_errors() == 2, within=30)
    finally:
        guard.stop()
        await task
    # While Guard is stopped: one more line at that very nanosecond, then later ones.
    write_log(kube.state, "shop", POD, "app", "ERROR db down", at=stamp)
    write_log(kube.state, "shop", POD, "app", "ERROR db down", "ERROR payment gateway timeout")
    guard = Guard(settings, home.playbooks_loaded())
    task = asyncio.create_task(guard.run())
    try:  # the last line counted: every line before it was read
        await wait_until(lambda: incidents(home, "payment_timeout"), within=30)
    finally:
        guard.stop()
        await task
    assert db_errors() == 4  # 2 before, 2 after: neither of the first two again
    resumed = log_requests(kube, follow="true")[-1]
    assert resumed.query["sinceTime"] == since_time(stamp)  # the stored second, again


async def test_a_traceback_in_a_pod_log_is_one_event(home, kube):
    kube.state.put_pod(pod(POD, statuses=[started("app")]))
    monitor = monitor_for(home, kube)
    monitor.baseline({})
    seen, task = await following(monitor)
    try:
        await wait_until(lambda: log_requests(kube, follow="true"), within=30)
        write_log(
            kube.state,
            "shop",
            POD,
            "app",
            "INFO handling order 42",
            "Traceback (most recent call last):",
            '  File "/app/shop/pay.py", line 88, in charge',
            "    raise GatewayError(code)",
            "shop.pay.GatewayError: ERROR 503 from the gateway",
            "INFO next request",
        )
        [sig] = await wait_until(lambda: seen.signals("app_error"), within=30)
        assert sig.count == 1 and sig.details["event_lines"] == 4
        assert sig.message == "shop.pay.GatewayError: ERROR 503 from the gateway"
        assert sig.details["evidence"].splitlines()[0] == "Traceback (most recent call last):"
        assert sig.target == f"shop/{POD}/app"
        positions = seen.observations[-1].state["logs"]
        assert list(positions) == [f"{POD}/app"]
    finally:
        await stop(task, monitor)


async def test_every_container_of_a_pod_is_followed_by_name(home, kube):
    kube.state.put_pod(pod(POD, statuses=[started("app"), started("sidecar")]))
    client = KubeClient(KubernetesSettings(kubeconfig=kube.kubeconfig(home.root), timeout=5))
    with pytest.raises(KubernetesError) as bare:  # what Guard never sends: no container
        client._json("logs", client.core.read_namespaced_pod_log, POD, "shop")
    assert bare.value.status == 400
    assert str(bare.value).endswith(
        f"a container name must be specified for pod {POD}, choose one of: [app sidecar]"
    )
    monitor = monitor_for(home, kube)
    monitor.baseline({})
    seen, task = await following(monitor)
    try:
        await wait_until(lambda: len(log_requests(kube, follow="true")) == 2, within=30)
        write_log(kube.state, "shop", POD, "sidecar", "ERROR envoy upstream reset")
        [sig] = await wait_until(lambda: seen.signals("app_error"), within=30)
        assert sig.target == f"shop/{POD}/sidecar" and sig.details["container"] == "sidecar"
        assert sorted(r.query["container"] for r in log_requests(kube, follow="true")) == [
            "app",
            "sidecar",
        ]
    finally:
        await stop(task, monitor)
        client.close()


@pytest.mark.unit
def test_an_endless_line_stays_bounded_in_memory():
    def endless() -> Iterator[bytes]:
        for _ in range(1600):  # 100 MiB without a newline, then one
            yield b"x" * 65536
        yield b"\nERROR after it\n"

    tracemalloc.start()
    try:
        lines = list(split_lines(endless(), 4096))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert lines == [b"x" * 4096, b"ERROR after it"]
    assert peak < 2 * 1024 * 1024  # bytes held: one read and the kept start, not 100 MiB


async def test_a_huge_line_in_a_pod_log_is_cut_and_the_next_line_still_counts(home, kube):
    kube.state.put_pod(pod(POD, statuses=[started("app")]))
    monitor = monitor_for(home, kube, max_line_bytes=1024)
    monitor.baseline({})
    seen, task = await following(monitor)
    try:
        await wait_until(lambda: log_requests(kube, follow="true"), within=30)
        write_log(kube.state, "shop", POD, "app", "ERROR " + "y" * (8 << 20), "ERROR short one")
        found = await wait_until(lambda: len(seen.signals("app_error")) >= 2, within=60)
        assert found
        messages = [s.message for s in seen.signals("app_error")]
        assert "ERROR short one" in messages
        assert max(len(m) for m in messages) <= 1000  # a message is capped; the line was cut
    finally:
        await stop(task, monitor)


async def test_many_pods_follow_at_most_max_streams(home, kube, monkeypatch):
    monkeypatch.setattr(kubernetes_logs, "MAX_STREAMS", 2)
    for i in range(4):
        kube.state.put_pod(pod(f"api-7d9f8b6c5d-p{i}", statuses=[started("app")]))
    monitor = monitor_for(home, kube)
    monitor.baseline({})
    seen, task = await following(monitor)
    try:
        await wait_until(lambda: len(log_requests(kube, follow="true")) == 2, within=30)
        write_log(kube.state, "shop", "api-7d9f8b6c5d-p0", "app", "ERROR marker")
        await wait_until(lambda: seen.signals("app_error"), within=30)
        assert len(log_requests(kube, follow="true")) == 2
    finally:
        await stop(task, monitor)


async def test_a_stream_waits_while_the_counting_is_behind_and_loses_nothing(
    home, kube, monkeypatch
):
    monkeypatch.setattr(kubernetes_logs, "BACKLOG", 50)
    kube.state.put_pod(pod(POD, statuses=[started("app")]))
    monitor = monitor_for(home, kube, multiline="none")
    assert monitor._logs is not None
    logs = monitor._logs
    logs.since = 0  # every line the pod has
    write_log(kube.state, "shop", POD, "app", *[f"ERROR job {i} failed" for i in range(500)])
    await logs.bind()  # streams on this loop, but nothing counts yet
    logs.sync(monitor._client(), kube.state.pods.values())
    queue = logs._queue
    assert queue is not None
    await wait_until(lambda: queue.qsize() > 50, within=30)
    await asyncio.sleep(0.3)  # the 500 lines are in the socket: a stream that did not wait
    assert queue.qsize() == 51  # would have handed them all over by now
    seen = Collected()
    counting = asyncio.create_task(logs.run(seen))
    try:
        await wait_until(lambda: sum(s.count for s in seen.signals("app_error")) == 500, within=60)
    finally:
        counting.cancel()
        await asyncio.gather(counting, return_exceptions=True)
        await monitor.close()


@pytest.mark.unit
def test_logs_need_the_watch_and_previous_tail_is_bounded():
    base = {"id": "p", "type": "kubernetes", "logs": [{"kind": "e", "pattern": "ERROR"}]}
    with pytest.raises(ValueError, match="logs follow the pods' containers: they need events"):
        KubernetesMonitorSpec.model_validate({**base, "events": False})
    with pytest.raises(ValueError, match="previous_tail"):
        KubernetesMonitorSpec.model_validate({**base, "previous_tail": 5000})
    spec = KubernetesMonitorSpec.model_validate({**base, "multiline": {"start": "^\\S"}})
    assert spec.previous_tail == 50 and spec.multiline_spec.start == "^\\S"


async def test_a_restarted_container_is_followed_again_and_nothing_counts_twice(home, kube):
    kube.state.put_pod(pod(POD, statuses=[started("app")]))
    monitor = monitor_for(home, kube, previous_tail=0)
    monitor.baseline({})
    seen, task = await following(monitor)

    def errors() -> int:
        return sum(s.count for s in seen.signals("app_error"))

    try:
        await wait_until(lambda: log_requests(kube, follow="true"), within=30)
        write_log(kube.state, "shop", POD, "app", "ERROR first instance")
        await wait_until(lambda: errors() == 1, within=30)
        crash(kube.state, "shop", POD, "app")  # the kubelet ends the stream
        start_again(kube.state, "shop", POD, "app")
        await wait_until(lambda: len(log_requests(kube, follow="true")) == 2, within=30)
        write_log(kube.state, "shop", POD, "app", "ERROR second instance")
        await wait_until(lambda: errors() == 2, within=30)
        messages = sorted(s.message for s in seen.signals("app_error"))
        assert messages == ["ERROR first instance", "ERROR second instance"]
        assert log_requests(kube, previous="true") == []  # previous_tail: 0 asks for nothing
    finally:
        await stop(task, monitor)
