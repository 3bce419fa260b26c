"""A host's journal over SSH (``type: journald`` with ``host:``), so a VPS with several
machines needs no mounts (docs/HOSTS.md).

``follow`` runs ``journalctl --all -o json -f`` through the host's guard-exec on one SSH
channel and counts its entries with the local monitor's parts (``journal_entries`` parses,
``JournalTail`` counts once and keeps the position); every emit carries the position, stored
with the signals, so Guard restarted (even by SIGKILL) resumes ``--after-cursor`` the last
entry read and counts nothing twice. The first start follows from the end (``-n 0``). A
connection that fails or ends raises ``MonitorError``; the runner follows again with backoff.
``check`` is a health check while following; the journal is read by ``follow`` only.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Mapping
from typing import Any

from guard.config import Settings
from guard.domain.exceptions import MonitorError
from guard.domain.records import Observation
from guard.hosts import allowlist
from guard.hosts.ssh import HostError, connect
from guard.monitors.base import Emit
from guard.monitors.journal_entries import TAIL, Lines, parse
from guard.monitors.journald import CHUNK, STATE_EVERY, journal_tail
from guard.playbooks.models import JournaldMonitorSpec


class RemoteJournalMonitor:
    """One host's whole journal, read over SSH through guard-exec."""

    type = "journald"

    def __init__(self, spec: JournaldMonitorSpec, settings: Settings) -> None:
        assert spec.host is not None
        self.spec, self.settings, self.host = spec, settings, spec.host
        self.id = spec.id
        self.interval = spec.every
        self.jitter = spec.jitter
        self._tail = journal_tail(spec)
        self._following = False
        self._broken: str | None = None
        self._stored = 0.0

    def baseline(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        """Resume from the stored position; with none, follow from the host's journal's end."""
        self._tail.restore(dict(state) if state else {})
        return None if state else self._tail.state()

    def command(self) -> list[str]:
        return allowlist.follow(self._tail.cursor, 0)

    async def follow(self, emit: Emit) -> None:
        self._following = True
        try:
            while True:
                await self._follow_once(emit)
        finally:
            self._following = False

    async def _follow_once(self, emit: Emit) -> None:
        argv = self.command()
        try:
            async with connect(self.settings, self.host) as conn:
                proc = await conn.create_process(shlex.join(argv), encoding=None)
                errors = asyncio.create_task(proc.stderr.read(2000))
                try:
                    self._broken = None
                    await self._read(proc.stdout, emit)
                    status = (await proc.wait()).exit_status
                    said = (await errors).decode(errors="replace").strip()
                finally:
                    errors.cancel()
        except HostError as exc:
            self._broken = f"monitor {self.id}: {exc}"
            raise MonitorError(self._broken) from None
        self._tail.reopen()
        self._broken = f"monitor {self.id}: journalctl on host {self.host} ended (exit {status})"
        raise MonitorError(f"{self._broken}: {said}" if said else self._broken)

    async def _read(self, stdout: Any, emit: Emit) -> None:
        limit = self.spec.max_line_bytes
        lines = Lines(6 * limit + TAIL)
        loop = asyncio.get_running_loop()
        while True:
            wait = self._tail.next_flush()
            try:
                async with asyncio.timeout(wait):
                    chunk = await stdout.read(CHUNK)
            except TimeoutError:
                chunk = None
            parsed = (parse(*line, limit) for line in lines.feed(chunk or b""))
            entries = [e for e in parsed if e is not None]
            tally = self._tally()
            self._tail.count(tally, self._tail.add(entries))
            signals = self._signals(tally)
            if signals or (entries and loop.time() - self._stored >= STATE_EVERY):
                self._stored = loop.time()
                await emit(Observation(signals, self._tail.state()))
            if chunk == b"":
                return

    def _tally(self) -> Any:
        from guard.monitors.logfile import Tally

        return Tally(self.id, "", source="journald")

    def _signals(self, tally: Any) -> list[Any]:
        signals: list[Any] = tally.result()
        for sig in signals:
            sig.details["host"] = self.host
        return signals

    async def check(self, state: Mapping[str, Any]) -> Observation:
        if self._broken:
            raise MonitorError(self._broken)
        return Observation([])

    async def close(self) -> None:
        return None
