"""Real journal files, written by systemd's own ``systemd-journal-remote`` from the journal
export format (fields ``NAME=value`` a line, or ``NAME``, a 64-bit little-endian length and the
bytes for binary values; a blank line ends an entry), and read by the real ``journalctl``; a
journald monitor over them, and what its ``follow`` emitted."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import struct
import subprocess
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from guard.domain.records import Observation, Signal
from guard.monitors import build_monitor
from guard.monitors.journald import JournaldMonitor
from guard.playbooks.models import JournaldMonitorSpec

BOOT = "0123456789abcdef0123456789abcdef"
REMOTE_PATHS = ("/lib/systemd/systemd-journal-remote", "/usr/lib/systemd/systemd-journal-remote")


def journal_remote() -> str:
    found = next((p for p in REMOTE_PATHS if Path(p).exists()), None)
    if found is None or shutil.which("journalctl") is None:
        pytest.fail("journal tests need systemd: apt-get install systemd systemd-journal-remote")
    return found


def _field(name: str, value: str | bytes) -> bytes:
    raw = value.encode() if isinstance(value, str) else value
    if b"\n" in raw or isinstance(value, bytes):
        return name.encode() + b"\n" + struct.pack("<Q", len(raw)) + raw + b"\n"
    return f"{name}={value}\n".encode()


class Journal:
    """A journal directory; ``write`` appends entries with a real journal writer."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._remote = journal_remote()
        self._clock = time.time_ns() // 1000
        self._mono = 1_000_000

    def entry(
        self,
        message: str | bytes,
        *,
        unit: str | None = "api.service",
        priority: int = 6,
        ident: str | None = None,
        **extra: str,
    ) -> bytes:
        """One entry in the export format, stamped now (and after the previous one)."""
        self._clock = max(self._clock + 1, time.time_ns() // 1000)
        self._mono += 1000
        fields = {
            "__REALTIME_TIMESTAMP": str(self._clock),
            "__MONOTONIC_TIMESTAMP": str(self._mono),
            "_BOOT_ID": BOOT,
            "PRIORITY": str(priority),
            "_PID": "4242",
            **extra,
        }
        if unit is not None:
            fields["_SYSTEMD_UNIT"] = unit
        fields["SYSLOG_IDENTIFIER"] = ident or (unit or "app").split(".")[0]
        out = b"".join(_field(k, v) for k, v in fields.items())
        return out + _field("MESSAGE", message) + b"\n"

    def write(self, entries: list[bytes], file: str = "system.journal") -> None:
        """Append the entries to ``file`` (created if new) with systemd-journal-remote."""
        subprocess.run(
            [self._remote, f"--output={self.folder / file}", "-"],
            input=b"".join(entries),
            check=True,
            capture_output=True,
            timeout=120,
        )


RULES = [{"kind": "err", "pattern": r"ERROR (?P<n>\d+)", "group_by": ["n"]}]


def spec(folder: Path, **kw: Any) -> JournaldMonitorSpec:
    return JournaldMonitorSpec.model_validate(
        {"id": "j", "type": "journald", "directory": str(folder), "every": "1h", **kw}
    )


def monitor(folder: Path, **kw: Any) -> JournaldMonitor:
    built = build_monitor(spec(folder, **{"rules": RULES, **kw}))
    assert isinstance(built, JournaldMonitor)
    return built


class Run:
    """What a monitor's ``follow`` emitted (as triage would store it)."""

    def __init__(self) -> None:
        self.seen: list[Observation] = []
        self.task: asyncio.Task[None] | None = None

    async def emit(self, obs: Observation) -> None:
        self.seen.append(obs)

    def signals(self, kind: str | None = None) -> list[Signal]:
        return [s for o in self.seen for s in o.signals if kind is None or s.kind == kind]

    def state(self) -> dict[str, Any]:
        return next((o.state for o in reversed(self.seen) if o.state), {})

    async def until(self, done: Callable[[], bool], within: float = 60.0) -> None:
        """Wait (bounded) until ``done()``; fail with what was seen."""
        deadline = time.monotonic() + within
        while not done():
            assert self.task is not None and not self.task.done(), self.task
            assert time.monotonic() < deadline, self.seen
            await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def following(watcher: JournaldMonitor) -> AsyncIterator[Run]:
    """``watcher.follow`` in a task; cancelled at the end like a SIGKILL (nothing after the
    last emit is kept)."""
    run = Run()
    run.task = asyncio.create_task(watcher.follow(run.emit))
    try:
        yield run
    finally:
        run.task.cancel()
        await asyncio.gather(run.task, return_exceptions=True)
        await watcher.close()


def numbers(signals: list[Signal]) -> Counter[tuple[str, str]]:
    """``(unit, n)`` of each ``ERROR n`` counted, with its count."""
    out: Counter[tuple[str, str]] = Counter()
    for sig in signals:
        assert sig.grouping is not None
        out[(sig.target, dict(sig.grouping.fields)["n"])] += sig.count
    return out


def wrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: str, follow: bool = True) -> None:
    """Put a ``journalctl`` first on PATH that runs ``before``, then the real one (without
    ``--follow`` unless ``follow``)."""
    real = shutil.which("journalctl")
    wrapper = tmp_path / "bin" / "journalctl"
    wrapper.parent.mkdir()
    drop = "" if follow else 'for a do shift; [ "$a" = --follow ] || set -- "$@" "$a"; done\n'
    wrapper.write_text(f'#!/bin/sh\n{before}\n{drop}exec {real} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper.parent}:{os.environ['PATH']}")
