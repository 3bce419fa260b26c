"""Signals of services for the correlation tests, at times the test chooses."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from guard.domain.records import Observation, Signal, utcnow
from guard.playbooks.services import ServiceMap
from guard.store.correlation import RelatedSignal

T0 = utcnow().replace(microsecond=0)


def at(seconds: float) -> datetime:
    """``seconds`` after the test's start (its clock: signals carry when they were seen)."""
    return T0 + timedelta(seconds=seconds)


def signal(monitor: str, seconds: float = 0, *, status: str = "firing", **kw: Any) -> Signal:
    """A failing (or passing) check of ``monitor`` on target ``svc-<monitor>``."""
    fields: dict[str, Any] = {
        "source": "http",
        "target": f"http://{monitor}/",
        "kind": "http_status" if status == "firing" else "http_ok",
        "message": f"{monitor} answered 503" if status == "firing" else f"{monitor} healthy",
    }
    return Signal(
        monitor_id=monitor,
        status=status,  # type: ignore[arg-type]
        observed_at=at(seconds),
        **(fields | kw),
    )


def obs(*signals: Signal) -> list[Observation]:
    return [Observation([s], monitor_id=s.monitor_id) for s in signals]


def shop_services(dependants: int = 5) -> ServiceMap:
    """``db`` (monitor ``db``), and ``dependants`` services ``api-N`` that depend on it."""
    monitors = {"db": "db", **{f"api-{i}": f"api-{i}" for i in range(dependants)}}
    direct = {f"api-{i}": ["db"] for i in range(dependants)}
    return ServiceMap.of(monitors, direct)


def related_row(incident_id: int, monitor: str, target: str, **fields: Any) -> RelatedSignal:
    """A related signal of ``monitor`` on ``target`` (an HTTP check's, critical, x2 unless
    ``fields`` say otherwise), not stored."""
    keys: dict[str, Any] = dict.fromkeys(("fingerprint", "check_key", "monitor_id"), monitor)
    base = {"source": "http", "kind": "http_status", "severity": "critical", "count": 2}
    return RelatedSignal(incident_id=incident_id, target=target, **(keys | base | fields))
