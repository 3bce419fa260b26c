"""Usage checks (``type: resources``): thresholds held for cycles, and trends to the limit.

Each check reads every target once (the selected containers' stats, or the local host and its
mounts: ``guard.monitors.usage``; Kubernetes pods: ``guard.monitors.usage_pods``), then
judges each metric the playbook names: above its level on ``for`` checks in a row (Monit's
cycles), or, with ``trend``, a line fitted to the last ``window`` reaching the limit within
``within`` (``guard.monitors.trend``). A target with a metric failing gives one firing signal
per failing metric (kind ``memory_high``, ``disk_high``, ...), whose message states the figure
and the prediction; a target with none gives one ``ok``, so its incidents end. The counts and
samples live in the monitor (bounded per target): a restart of Guard starts them again, which
costs one window, not a false alarm.
Verification asks about one target (``check_target``): the level now, without ``for``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from docker.errors import DockerException

from guard.config import Settings
from guard.domain.exceptions import KubernetesError, MonitorError
from guard.domain.records import Observation, Signal
from guard.monitors.base import spec_signal
from guard.monitors.trend import Samples, human_duration
from guard.monitors.usage import PARALLEL, ContainerStats, Reading, Sample, host_sample
from guard.monitors.usage_pods import PodUsage
from guard.playbooks.models import ResourcesMonitorSpec
from guard.playbooks.resources import METRICS, Threshold
from guard.util.docker_client import Timeouts, docker_client

KEPT = 60  # samples of each trend line kept in the monitor's state

TRENDED = ("memory", "disk", "inodes")  # the metrics with a limit a fit can reach
COUNTED = ("pids", "restarts")  # `above:` is a count, not a percentage


class ResourcesMonitor:
    """Containers chosen like a docker monitor's, pods, or ``host: local`` and its mounts."""

    type = "resources"

    def __init__(
        self, spec: ResourcesMonitorSpec, settings: Settings | None = None, *, client: Any = None
    ) -> None:
        self.spec = spec
        self._settings = settings
        self.id = spec.id
        self.interval = spec.every
        self.jitter = spec.jitter
        self._client = client
        self._stats: ContainerStats | PodUsage | None = None
        self._levels: dict[str, Threshold] = {
            m: t for m in METRICS if (t := getattr(spec, m)) is not None
        }
        self._held: dict[tuple[str, str], int] = {}  # (target, metric) -> checks above in a row
        self._trends: dict[tuple[str, str], Samples] = {}

    async def check(self, state: Mapping[str, Any]) -> Observation:
        if not self._held and not self._trends:  # the first check since start: go on from there
            self.restore(state)
        samples = await asyncio.to_thread(self._sample)
        signals = self.judge(samples, time.time())
        return Observation(signals, self.memo())

    async def check_target(self, target: str) -> Observation:
        samples = await asyncio.to_thread(self._sample)
        now = time.time()
        return Observation(self.judge([s for s in samples if s.target == target], now, hold=False))

    def memo(self) -> dict[str, Any]:
        """What a restart must not lose, as the monitor's state: the checks each level has been
        held for, and each trend's samples (wall-clock times, at most ``KEPT`` per line), so a
        leak seen for nine minutes is not watched from nothing again after a deploy of Guard."""
        return {
            "held": [[t, m, n] for (t, m), n in self._held.items() if n],
            "trends": [[t, m, s.kept(KEPT)] for (t, m), s in self._trends.items() if len(s)],
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        """Go on from ``memo``'s state (what a trend's window no longer holds is dropped)."""
        window = self.spec.trend.window if self.spec.trend is not None else 0.0
        for entry in state.get("held") or []:
            if isinstance(entry, list) and len(entry) == 3 and isinstance(entry[2], int):
                self._held[(str(entry[0]), str(entry[1]))] = entry[2]
        for entry in state.get("trends") or [] if window else []:
            if isinstance(entry, list) and len(entry) == 3 and isinstance(entry[2], list):
                samples = Samples.of(window, entry[2])
                if len(samples):
                    self._trends[(str(entry[0]), str(entry[1]))] = samples

    def _sample(self) -> list[Sample]:
        if self.spec.host is not None:
            return host_sample(self.spec.mounts)
        try:
            if self._stats is None:
                self._stats = self._pods() or ContainerStats(self._docker(), self._filters())
            return self._stats.sample()
        except KubernetesError as exc:
            raise MonitorError(str(exc)) from None
        except DockerException as exc:
            raise MonitorError(
                f"cannot read container stats from the Docker engine: {exc}"
            ) from None

    def _pods(self) -> PodUsage | None:
        if self.spec.pods is None:
            return None
        from guard.k8s.client import KubeClient

        kube = KubeClient((self._settings or Settings()).kubernetes)
        return PodUsage(kube, self.spec.pods.namespace, self.spec.pods.selector)

    def _filters(self) -> dict[str, Any]:
        selector = self.spec.selector
        filters: dict[str, Any] = {}
        if selector is not None and selector.labels:
            filters["label"] = selector.labels
        if selector is not None and selector.name:
            filters["name"] = selector.name
        return filters

    def _docker(self) -> Any:
        if self._client is None:
            try:
                self._client = docker_client(Timeouts.monitor, pool=PARALLEL)
            except DockerException as exc:
                raise MonitorError(
                    f"cannot reach the Docker engine: {exc} (is dockerd running and "
                    "/var/run/docker.sock mounted? see docs/DEPLOY.md)"
                ) from None
        return self._client

    def judge(self, samples: list[Sample], now: float, *, hold: bool = True) -> list[Signal]:
        """The signals for one cycle's samples; ``hold``: count ``for`` (verification does not)."""
        signals: list[Signal] = []
        seen: set[tuple[str, str]] = set()
        for sample in samples:
            if not sample.readings and "error" not in sample.facts:
                continue  # a container that stopped between the list and its stats
            firing: list[Signal] = []
            for metric, reading in sample.readings.items():
                key = (sample.target, metric)
                seen.add(key)
                failing = self._judge(sample, metric, reading, now, hold)
                if failing is not None:
                    firing.append(failing)
            signals.extend(firing or [self._ok(sample)])
        for key in set(self._held) - seen:  # targets gone: forget them
            del self._held[key]
        for key in set(self._trends) - seen:
            del self._trends[key]
        return signals

    def _judge(
        self, sample: Sample, metric: str, reading: Reading, now: float, hold: bool
    ) -> Signal | None:
        key = (sample.target, metric)
        level = self._levels.get(metric)
        figure = describe(metric, reading, sample.target)
        eta = rate = None
        if self.spec.trend is not None and metric in TRENDED and reading.limit > 0:
            samples = self._trends.get(key)
            if samples is None:
                samples = self._trends[key] = Samples(self.spec.trend.window)
            samples.add(now, reading.used)
            line = samples.fit()
            eta = samples.time_to(reading.limit, line)
            rate = line.slope if line is not None else None
        above = level is not None and _value(metric, reading) > level.above
        count = self._held.get(key, 0) + 1 if above else 0
        self._held[key] = count
        details: dict[str, Any] = {"metric": metric, "used": reading.used, "limit": reading.limit}
        details["percent"] = round(reading.percent, 1)
        details.update(sample.facts)
        if rate is not None:
            details["rate_per_s"] = round(rate, 1)
        predicted = (
            eta is not None and self.spec.trend is not None and eta <= self.spec.trend.within
        )
        if predicted and eta is not None and rate is not None:
            details["predicted_in_s"] = round(eta)
            what = "full" if metric == "disk" else "reaches the limit"
            message = f"{figure}, rising {_rate(metric, rate)}: {what} in {human_duration(eta)}"
            return self._signal(sample.target, f"{metric}_high", message, details)
        if above and level is not None and (not hold or count >= level.for_count):
            unit = "" if metric in COUNTED else " %"
            checks = f" on {count} checks" if hold and level.for_count > 1 else ""
            message = f"{figure}: above {level.above:g}{unit}{checks}"
            return self._signal(sample.target, f"{metric}_high", message, details)
        return None

    def _ok(self, sample: Sample) -> Signal:
        """All is well on ``sample``'s target; a mount that cannot be read is a finding."""
        details: dict[str, Any] = {
            m: r.used if m in COUNTED else round(r.percent, 1) for m, r in sample.readings.items()
        }
        details.update(sample.facts)
        if not sample.readings:
            error = sample.facts.get("error", "nothing to read")
            return self._signal(sample.target, "mount_error", f"cannot read {error}", details)
        figures = "; ".join(describe(m, r, sample.target) for m, r in sample.readings.items())
        return self._signal(sample.target, "resources_ok", figures, details, ok=True)

    def _signal(
        self, target: str, kind: str, message: str, details: dict[str, Any], *, ok: bool = False
    ) -> Signal:
        return spec_signal(self.spec, "resources", target, kind, message, details, ok=ok)

    async def close(self) -> None:
        if isinstance(self._stats, ContainerStats):
            self._stats.close()
        self._stats = None


def describe(metric: str, reading: Reading, target: str) -> str:
    """``memory 412 MiB of 512 MiB (80 %)``, ``/data 60 MiB of 64 MiB (94 %)``, ``pids 12``."""
    if metric in COUNTED:
        of = f" of {reading.limit:.0f}" if reading.limit else ""
        return f"{metric} {reading.used:.0f}{of}"
    if metric == "cpu":
        return f"cpu {reading.used:.0f} %"
    name = target.partition(":")[2] if metric == "disk" and ":" in target else metric
    if metric == "inodes":
        name = f"inodes of {target.partition(':')[2] or target}"
        return f"{name} {reading.used:.0f} of {reading.limit:.0f} ({reading.percent:.0f} %)"
    return f"{name} {_mib(reading.used)} of {_mib(reading.limit)} ({reading.percent:.0f} %)"


def _value(metric: str, reading: Reading) -> float:
    return reading.used if metric in (*COUNTED, "cpu") else reading.percent


def _mib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 10 * 2**30 else f"{n / 2**20:.0f} MiB"


def _rate(metric: str, per_s: float) -> str:
    if metric == "inodes":
        return f"{per_s:.1f} inodes/s"
    return f"{per_s / 1e6:.1f} MB/s" if per_s >= 1e5 else f"{per_s / 1e3:.1f} kB/s"
