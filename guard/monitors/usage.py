"""Readings of usage: containers from their engine's stats, the local host from /proc.

Containers: one ``GET /containers/json`` lists the selected ones (a summary, not an inspect
each), then one ``GET /containers/{id}/stats?stream=false&one-shot=true`` each, a few at a
time. ``stats(stream=False)`` without ``one-shot`` waits for two samples (1-2 s a container:
200 containers would not fit a 15 s cycle); with it the engine answers at once, and the CPU
figure is taken between two of our own cycles instead. A streaming connection per container
would cost a thread and a socket each; reading the cgroup files would need Guard on the
engine's host with /sys mounted. Measured in ``bench resources`` (docs/BENCHMARKS.md).
Memory is what ``docker stats`` shows: usage less the inactive page cache, against the limit
(the host's memory when the container has none).

The host (``host: local``): /proc/meminfo (MemTotal less MemAvailable), /proc/loadavg,
/proc/sys/fs/file-nr, and ``os.statvfs`` for each mount (space and inodes, as ``df`` counts).
Tested with the monitor that judges them: tests/monitors/test_resources.py.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PARALLEL = 32  # stats requests in flight at once (and the client's connection pool)


@dataclass(frozen=True)
class Reading:
    """One metric of one target: ``used`` of ``limit`` (same unit)."""

    used: float
    limit: float
    unit: str  # "B" (bytes), "%" (cpu, of one core), "pids", "inodes"

    @property
    def percent(self) -> float:
        return 100.0 * self.used / self.limit if self.limit > 0 else 0.0


@dataclass
class Sample:
    """What one look at one target found: its readings by metric, and facts for evidence."""

    target: str
    readings: dict[str, Reading] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)


class ContainerStats:
    """Readings of the selected containers, one cycle at a time (CPU between cycles)."""

    def __init__(self, client: Any, filters: Mapping[str, Any]) -> None:
        self._api = client.api
        self._filters = dict(filters)
        self._cpu: dict[str, tuple[float, float]] = {}  # id -> (container ns, system ns)
        self._pool = ThreadPoolExecutor(PARALLEL, thread_name_prefix="guard-stats")

    def sample(self) -> list[Sample]:
        listed = self._api.containers(filters=self._filters)  # running ones only
        ids = [c["Id"] for c in listed]
        stats = list(self._pool.map(self._stats, ids))
        seen = set(ids)
        for gone in set(self._cpu) - seen:
            del self._cpu[gone]
        return [self._reading(c, s) for c, s in zip(listed, stats, strict=True) if s is not None]

    def _stats(self, cid: str) -> dict[str, Any] | None:
        from docker.errors import NotFound

        try:
            return dict(self._api.stats(cid, stream=False, one_shot=True))
        except NotFound:  # gone between the list and its stats
            return None

    def _reading(self, summary: Mapping[str, Any], stats: Mapping[str, Any]) -> Sample:
        name = (summary.get("Names") or ["/" + summary["Id"][:12]])[0].lstrip("/")
        sample = Sample(name, facts={"container_id": summary["Id"][:12]})
        memory = stats.get("memory_stats") or {}
        if "usage" in memory:
            extra = memory.get("stats") or {}
            cache = extra.get("inactive_file", extra.get("total_inactive_file", 0))
            used = max(0, memory["usage"] - cache)
            sample.readings["memory"] = Reading(used, memory.get("limit", 0), "B")
        pids = stats.get("pids_stats") or {}
        if "current" in pids:
            limit = pids.get("limit") or 0
            sample.readings["pids"] = Reading(pids["current"], limit, "pids")
        cpu = self._cpu_percent(summary["Id"], stats.get("cpu_stats") or {})
        if cpu is not None:
            sample.readings["cpu"] = cpu
        return sample

    def _cpu_percent(self, cid: str, cpu: Mapping[str, Any]) -> Reading | None:
        """CPU as ``docker stats`` shows it (100 % = one core), since our previous cycle."""
        total = (cpu.get("cpu_usage") or {}).get("total_usage")
        system = cpu.get("system_cpu_usage")
        if total is None or system is None:
            return None
        before = self._cpu.get(cid)
        self._cpu[cid] = (total, system)
        if before is None or system <= before[1]:
            return None
        cores = cpu.get("online_cpus") or 1
        share = (total - before[0]) / (system - before[1])
        return Reading(share * cores * 100.0, cores * 100.0, "%")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def host_sample(mounts: Iterable[str], proc: Path = Path("/proc")) -> list[Sample]:
    """The local host's memory (target ``local``) and each mount's space and inodes
    (target ``local:/path``)."""
    meminfo = _meminfo(proc / "meminfo")
    total = meminfo.get("MemTotal", 0)
    available = meminfo.get("MemAvailable", meminfo.get("MemFree", 0))
    host = Sample("local", {"memory": Reading(total - available, total, "B")})
    try:
        load = (proc / "loadavg").read_text().split()[:3]
        host.facts["load"] = [float(x) for x in load]
        open_files, _, max_files = (proc / "sys/fs/file-nr").read_text().split()
        host.facts["open_files"] = int(open_files)
        host.facts["max_open_files"] = int(max_files)
    except (OSError, ValueError):
        pass  # a /proc without them (a restricted container): memory is still told
    samples = [host]
    for mount in mounts:
        samples.append(_mount(mount))
    return samples


def _mount(path: str) -> Sample:
    sample = Sample(f"local:{path}", facts={"mount": path})
    try:
        st = os.statvfs(path)
    except OSError as exc:
        sample.facts["error"] = f"{path}: {exc.strerror or exc}"
        return sample
    used = (st.f_blocks - st.f_bfree) * st.f_frsize
    sample.readings["disk"] = Reading(used, used + st.f_bavail * st.f_frsize, "B")
    if st.f_files:
        sample.readings["inodes"] = Reading(st.f_files - st.f_ffree, st.f_files, "inodes")
    return sample


def _meminfo(path: Path) -> dict[str, int]:
    values: dict[str, int] = {}
    for line in path.read_text().splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            values[name] = int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    return values
