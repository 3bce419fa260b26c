"""A monitor kind defined in the test suite only: a flag file's last line is ``down`` or not.

``FLAG_KIND`` declares everything Guard needs in one entry; ``registered_flag_kind`` adds it to
the table for one test and takes it away after (``guard/`` is not edited)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from guard.config import Settings
from guard.domain.durations import Duration
from guard.domain.records import Observation, Signal
from guard.monitors import (
    FirstLook,
    MonitorKind,
    Verification,
    register_monitor_kind,
    unregister_monitor_kind,
)
from guard.playbooks.models import MonitorSpecBase


class FlagMonitorSpec(MonitorSpecBase):
    type: Literal["flagfile"]
    path: str
    every: Duration = 30.0


class FlagMonitor:
    """Fires ``flag_down`` on the file while its last line is ``down``; ``ok`` otherwise."""

    def __init__(self, spec: FlagMonitorSpec) -> None:
        self.id: str = spec.id
        self.type: str = spec.type
        self.interval: float = spec.every
        self.jitter: float = spec.jitter
        self.path = Path(spec.path)

    async def check(self, state: Mapping[str, Any]) -> Observation:
        text = ((await asyncio.to_thread(self.path.read_text)).splitlines() or [""])[-1]
        status: Literal["firing", "ok"] = "firing" if text == "down" else "ok"
        message = f"{self.path.name} reads {text!r}"
        sig = Signal(self.id, self.type, str(self.path), "flag_down", message, status=status)
        return Observation([sig], {"last": text})

    async def close(self) -> None:
        return None


async def flag_lines(incident: Any, lines: int, run: Any) -> str:
    text = await asyncio.to_thread(Path(incident.target).read_text)
    return "".join(text.splitlines(keepends=True)[-lines:])


def build_flag(spec: FlagMonitorSpec, settings: Settings | None) -> FlagMonitor:
    return FlagMonitor(spec)


FLAG_KIND = MonitorKind(
    FlagMonitorSpec,
    build_flag,
    recent_lines=flag_lines,
    first_look=FirstLook("flag.look", {"tail": 3}),
    verification=Verification(),
)


@contextmanager
def registered_flag_kind() -> Iterator[MonitorKind[FlagMonitorSpec]]:
    register_monitor_kind(FLAG_KIND)
    try:
        yield FLAG_KIND
    finally:
        unregister_monitor_kind("flagfile")
