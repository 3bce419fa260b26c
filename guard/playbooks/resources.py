"""The playbook shapes of usage checks: thresholds held for cycles, and trends.

``memory: {above: 90%, for: 3}`` fires when memory is above 90 % of its limit on 3 checks in a
row (Monit's "for 3 cycles"); ``trend: {window: 10m, within: 30m}`` fires when a line fitted to
the last 10 minutes reaches the limit within 30 minutes. ``above`` is a percentage of the limit
(``90%``), for ``pids`` a count; ``cpu`` is a percentage of one core, as
``docker stats`` shows it.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from guard.domain.durations import Duration
from guard.playbooks.logrules import SpecModel

METRICS = ("memory", "cpu", "disk", "inodes", "pids")


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


def usage_problem(spec: Any) -> str | None:
    """What is wrong with a ``type: resources`` entry (a ``ResourcesMonitorSpec``), or None."""
    if (spec.selector is None) == (spec.host is None):
        return "resources: give either selector: (containers) or host: local (this host)"
    if spec.host is not None and spec.host != "local":
        return f"host: {spec.host} needs the hosts: section (not yet available); use host: local"
    if spec.selector is not None and not spec.selector.labels and not spec.selector.name:
        return "selector needs a label or a name (watching every container is unsafe)"
    given = [name for name in METRICS if getattr(spec, name) is not None]
    if not given and spec.trend is None:
        return f"resources: nothing to watch: give a threshold ({', '.join(METRICS)}) or trend:"
    host_only, container_only = ("disk", "inodes"), ("cpu", "pids")
    wrong = [n for n in given if n in (container_only if spec.host else host_only)]
    if wrong:
        where = "containers (selector:)" if spec.host else "a host's mounts (host:, mounts:)"
        return f"resources: {', '.join(wrong)} is for {where}"
    if spec.mounts and spec.host is None:
        return "mounts: needs host: local (a container's mounts are not watched yet)"
    if any(getattr(spec, n) is not None for n in host_only) and not spec.mounts:
        return "disk: and inodes: need mounts: [/path, ...] to watch"
    bad = [m for m in spec.mounts if not m.startswith("/")]
    if bad:
        return f"mounts: {bad[0]!r} is not an absolute path"
    return None
