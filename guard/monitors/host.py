"""Watch a host of ``hosts:``: each check logs in over SSH and asks guard-exec for its
allowlist, the cheapest thing the host allows. A host presenting a key other than the pinned
one is ``host_key_changed`` (Guard refuses to connect, and says so naming the host); one that
cannot be reached or does not answer in time is ``host_unreachable``. Its contract rig, a real
OpenSSH host whose key is changed: tests/contracts/test_monitor_contract.py."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from guard.config import Settings
from guard.domain.records import Observation, Signal
from guard.hosts import allowlist
from guard.hosts.ssh import HostError, HostKeyChanged, run
from guard.playbooks.models import HostMonitorSpec


class HostMonitor:
    """One host; a check is one SSH login and one allowlisted command."""

    type = "host"

    def __init__(self, spec: HostMonitorSpec, settings: Settings) -> None:
        self.spec = spec
        self.settings = settings
        self.id = spec.id
        self.interval = spec.every
        self.jitter = spec.jitter

    def _signal(self, kind: str, message: str, *, ok: bool = False) -> Signal:
        return Signal(
            monitor_id=self.id,
            source="host",
            target=self.spec.host,
            kind=kind,
            message=message,
            status="ok" if ok else "firing",
            severity=self.spec.severity,
            details={"host": self.spec.host},
        )

    async def check(self, state: Mapping[str, Any]) -> Observation:
        name = self.spec.host
        try:
            ran = await run(self.settings, name, allowlist.ALLOWLIST_COMMAND)
        except HostKeyChanged as exc:
            return Observation([self._signal("host_key_changed", str(exc))])
        except HostError as exc:
            return Observation([self._signal("host_unreachable", str(exc))])
        if not ran.ok:
            why = f"host {name}: guard-exec did not list its allowlist (exit {ran.exit_status})"
            return Observation([self._signal("host_unreachable", f"{why}: {ran.output[:200]}")])
        return Observation([self._signal("host_ok", f"host {name} answers", ok=True)])

    async def close(self) -> None:
        return None
