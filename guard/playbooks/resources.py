"""The playbook shapes of usage checks: thresholds held for cycles, and trends.

``memory: {above: 90%, for: 3}`` fires when memory is above 90 % of its limit on 3 checks in a
row (Monit's "for 3 cycles"); ``trend: {window: 10m, within: 30m}`` fires when a line fitted to
the last 10 minutes reaches the limit within 30 minutes. ``above`` is a percentage of the limit
(``90%``), for ``pids`` and ``restarts`` a count; ``cpu`` is a percentage of one core, as
``docker stats`` shows it.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from guard.domain.durations import Duration
from guard.playbooks.logrules import SpecModel

METRICS = ("memory", "cpu", "disk", "inodes", "pids", "restarts")
WATCHES = {  # what each kind of target has: containers, Kubernetes pods, a host
    "selector": ("memory", "cpu", "pids"),
    "pods": ("memory", "cpu", "restarts"),
    "host": ("memory", "disk", "inodes"),
}


class Threshold(SpecModel):
    """``above`` a level for ``for`` consecutive checks."""

    above: float = Field(description="a percentage of the limit (`90%`); for pids, a count")
    for_count: int = Field(default=1, ge=1, alias="for", description="consecutive checks")

    @field_validator("above", mode="before")
    @classmethod
    def _level(cls, value: object) -> object:
        if isinstance(value, str):
            text = value.strip().rstrip("%").strip()
            try:
                return float(text)
            except ValueError:
                raise ValueError(
                    f"above: {value!r} is not a level (write e.g. `above: 90%`)"
                ) from None
        return value


class TrendSpec(SpecModel):
    """Fire when the line fitted over ``window`` reaches the limit within ``within``."""

    window: Duration = Field(default=600.0, gt=0, description="how far back the fit looks")
    within: Duration = Field(default=1800.0, gt=0, description="how soon counts as an incident")


class PodsSelector(SpecModel):
    """Kubernetes pods: the metrics API's usage where it is served, else container status."""

    namespace: str = "default"
    selector: str | None = Field(default=None, description="label selector, e.g. app=api")


def usage_problem(spec: Any) -> str | None:
    """What is wrong with a ``type: resources`` entry (a ``ResourcesMonitorSpec``), or None."""
    given_targets = [name for name in WATCHES if getattr(spec, name) is not None]
    if len(given_targets) != 1:
        return (
            "resources: give one of selector: (containers), pods: (Kubernetes) "
            "or host: local (this host)"
        )
    [where] = given_targets
    if spec.host is not None and spec.host != "local":
        return f"host: {spec.host} needs the hosts: section (not yet available); use host: local"
    if spec.selector is not None and not spec.selector.labels and not spec.selector.name:
        return "selector needs a label or a name (watching every container is unsafe)"
    given = [name for name in METRICS if getattr(spec, name) is not None]
    if not given and spec.trend is None:
        return f"resources: nothing to watch: give a threshold ({', '.join(METRICS)}) or trend:"
    wrong = [name for name in given if name not in WATCHES[where]]
    if wrong:
        has = ", ".join(WATCHES[where])
        return f"resources: {', '.join(wrong)} is not watched with {where}: (it has {has})"
    if spec.mounts and spec.host is None:
        return "mounts: needs host: local (a container's mounts are not watched yet)"
    if (spec.disk is not None or spec.inodes is not None) and not spec.mounts:
        return "disk: and inodes: need mounts: [/path, ...] to watch"
    bad = [m for m in spec.mounts if not m.startswith("/")]
    if bad:
        return f"mounts: {bad[0]!r} is not an absolute path"
    return None
