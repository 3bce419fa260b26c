"""Helpers for the pod log tests: a kubernetes monitor with ``logs`` rules, followed in-process
against the local API server (tests/fakes/kube.py, tests/fakes/kube_logs.py)."""

from __future__ import annotations

import asyncio
from typing import Any

from guard.domain.records import Observation, Signal
from guard.monitors.kubernetes import KubernetesMonitor
from guard.playbooks.models import KubernetesMonitorSpec
from tests.fakes.kube import KubeServer
from tests.kubernetes.test_kubernetes import kube_home

POD = "api-7d9f8b6c5d-x2k4p"
RULES = [
    {"kind": "payment_timeout", "pattern": r"payment gateway timeout"},
    {"kind": "app_error", "pattern": r"\bERROR\b|Error:"},
]


def monitor_for(home: Any, kube: KubeServer, **spec: Any) -> KubernetesMonitor:
    settings = kube_home(home, kube)
    model = KubernetesMonitorSpec.model_validate(
        {
            "id": "shop-pods",
            "type": "kubernetes",
            "namespace": "shop",
            "selector": "app=api",
            "logs": RULES,
            **spec,
        }
    )
    return KubernetesMonitor(model, settings, watch_timeout=30)


class Collected:
    """What ``follow`` emitted."""

    def __init__(self) -> None:
        self.observations: list[Observation] = []

    async def __call__(self, obs: Observation) -> None:
        self.observations.append(obs)

    def signals(self, kind: str) -> list[Signal]:
        return [s for o in self.observations for s in o.signals if s.kind == kind]


async def following(monitor: KubernetesMonitor) -> tuple[Collected, asyncio.Task[None]]:
    seen = Collected()
    return seen, asyncio.create_task(monitor.follow(seen))


async def stop(task: asyncio.Task[None], monitor: KubernetesMonitor) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await monitor.close()


def log_requests(kube: KubeServer, **query: str) -> list[Any]:
    return [
        r for r in kube.sent("GET", "/log") if all(r.query.get(k) == v for k, v in query.items())
    ]
