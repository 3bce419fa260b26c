"""Outside data never becomes a Prometheus label: a Warning event's ``reason`` (any string the
cluster, or whoever can create Events in it, writes) counts under the ``k8s_event`` family.
The reasons stay on the incidents, where they are needed."""

from __future__ import annotations

from typing import Any

from sqlmodel import select

from guard.app import Guard
from guard.store.models import Incident
from guard.telemetry import metrics
from tests.fakes.kube import KubeServer, pod
from tests.kubernetes.test_kubernetes_actions import settings_for


def series() -> dict[str, float]:
    """The series on ``/metrics`` (``guard.web.server`` serves ``metrics.render()``) and their values."""
    lines = metrics.render().decode().splitlines()
    return {
        name: float(value)
        for name, _, value in (line.rpartition(" ") for line in lines)
        if name and not name.startswith("#")
    }


def warn(kube: KubeServer, reasons: range) -> None:
    for i in reasons:
        kube.state.warning("api-7d9f8b6c5d-a", f"Reason{i}X", f"event number {i}")


async def test_5000_distinct_event_reasons_add_no_series(home: Any, kube: KubeServer) -> None:
    settings = settings_for(home, kube)
    kube.state.put_pod(pod("api-7d9f8b6c5d-a"))
    await Guard(settings, home.playbooks_loaded()).run_once()  # the baseline of events
    for first in (0, 30):  # enough to fold into a storm and resolve: every series exists already
        warn(kube, range(first, first + 30))
        await Guard(settings, home.playbooks_loaded()).run_once()
    before = series()
    warn(kube, range(60, 5060))
    await Guard(settings, home.playbooks_loaded()).run_once()
    after = series()
    assert len(after) == len(before) and after.keys() == before.keys(), after.keys() - before
    assert not any("eason" in name for name in after)
    counted = 'guard_signals_total{kind="k8s_event",source="kubernetes",status="firing"}'
    assert after[counted] - before[counted] == 5000  # every event was counted, under its family
    with home.database().session() as s:  # the reasons are kept where they mean something
        kinds = {i.kind for i in s.exec(select(Incident)).all()}
    assert "k8s_event_reason0_x" in kinds


def test_a_label_past_its_bound_counts_as_other() -> None:
    bounded = metrics._Bounded("test", most=3)
    assert [bounded(v) for v in ("a", "b", "c", "d", "a", "e")] == [
        "a",
        "b",
        "c",
        "other",
        "a",
        "other",
    ]
    assert metrics.kind_label("k8s_event_failed_mount") == "k8s_event"
    assert metrics.kind_label("container_exited") == "container_exited"
