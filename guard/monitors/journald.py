"""Follow the systemd journal (``type: journald``) and turn matching entries into signals.

``follow`` runs ``journalctl --directory DIR --output=json --follow`` (with ``--unit`` for each
of ``units`` and ``--priority``) as a subprocess and counts its entries as they come
(``guard.monitors.journal_tail``), emitting their signals with the new position: the journal
cursor, stored with the incidents in one transaction, so a restart of Guard resumes at that
cursor and counts nothing twice. Entries that make no signal move the stored position at most
every ``STATE_EVERY`` (a chatty journal is not a write per line); lost, they are read again.
When ``journalctl`` fails, ``follow`` raises ``MonitorError`` and the runner starts it again
with backoff; one that cannot follow is polled instead.

``check`` is a health check while ``follow`` runs (``journalctl`` and ``directory`` are there).
When nothing follows (``guard run --once``, verification, ``follow`` waiting to start again)
it reads once, from the position to the end of the journal, with the same counting: its
signals and the new position. A monitor the runner baselined keeps its own position (the
runner's copy lags behind what ``follow`` emitted); any other reads from the state it is given.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import re
import shutil
import subprocess
import time
from collections.abc import Mapping
from typing import Any

from loguru import logger

from guard.domain.exceptions import MonitorError
from guard.domain.records import Observation
from guard.monitors.base import Emit
from guard.monitors.journal_entries import FIELDS, TAIL, Lines, parse
from guard.monitors.journal_tail import JournalTail
from guard.playbooks.models import JournaldMonitorSpec
from guard.util.textsafe import line_tail

CHUNK = 1 << 20  # bytes read from journalctl at once (one batch, one emit)
MAX_BYTES_PER_CHECK = 256 << 20  # bound one check's reading; the next check continues
STDERR_KEPT = 2000
POLL_EVERY = 1.0  # seconds between reads when journalctl cannot follow
STATE_EVERY = 5.0  # seconds between stores of the position when no signal carries it
HEALTHY_AFTER = 5.0  # a journalctl that failed is well again once one has run this long
QUIET_RESTART = 300.0  # a journalctl silent this long is started again (new files are seen)


def journal_tail(spec: JournaldMonitorSpec) -> JournalTail:
    """The counting side of a journald monitor, local or over SSH (``ssh_journal``)."""
    from guard.monitors.logfile import groupers_of
    from guard.monitors.matcher import LineMatcher
    from guard.monitors.multiline import Framer

    return JournalTail(
        list(spec.rules),
        LineMatcher([(r.pattern, r.ignore_case) for r in spec.rules]),
        groupers_of(spec),
        Framer(spec.multiline_spec),
        spec.max_line_bytes,
    )


class JournaldMonitor:
    """The journal of a host (its journal directory, mounted), filtered by unit and priority."""

    type = "journald"

    def __init__(self, spec: JournaldMonitorSpec) -> None:
        self.spec = spec
        self.id = spec.id
        self.interval = spec.every
        self.jitter = spec.jitter
        self._tail = journal_tail(spec)
        self._baselined = False  # the position is this instance's, not the caller's
        self._lock = asyncio.Lock()  # one reader at a time: follow, or a check's read
        self._following = False
        self._broken: str | None = None  # why the last journalctl of follow ended
        self._said = ""  # what a journalctl that ended by itself said
        self._polling = False  # journalctl could not follow: it is run every POLL_EVERY
        self._quiet = False  # the last journalctl was stopped for being silent too long
        self._stored = 0.0  # when follow last emitted the position
        self._spawned = 0.0  # when the last journalctl started
        self._procs: set[asyncio.subprocess.Process] = set()

    # -- position -------------------------------------------------------------------------------

    def baseline(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        """Resume from the stored position, or start at the end of the journal as it is now.
        From then on this instance keeps the position (the runner's copy may lag behind)."""
        self._baselined = True
        return self._start(state)

    def _start(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        if state:
            self._tail.restore(dict(state))
            return None
        now = time.time_ns() // 1000
        if self.spec.start == "beginning":
            self._tail.restore({})
        else:
            cursor = self._last_cursor()
            self._tail.restore({"cursor": cursor} if cursor else {"since": now})
        return self._tail.state()

    def _last_cursor(self) -> str | None:
        """The cursor of the journal's last entry (None: empty, or it cannot be read now)."""
        exe = _reader(self.spec.directory)
        if exe is None:
            return None
        cmd = [exe, "--directory", self.spec.directory, "--output=json", "--lines=1"]
        cmd += ["--no-pager", "--output-fields=PRIORITY"]
        try:
            out = subprocess.run(cmd, capture_output=True, timeout=60, check=False).stdout
        except (OSError, subprocess.SubprocessError):
            return None
        lines = out.strip().splitlines()
        entry = parse(lines[-1], None, 0) if lines else None
        return entry.cursor if entry is not None else None

    # -- journalctl -----------------------------------------------------------------------------

    def _journalctl(self) -> str:
        """The journalctl binary; ``MonitorError`` when it or ``directory`` is missing."""
        exe = shutil.which("journalctl")
        if exe is None:
            raise MonitorError(
                f"monitor {self.id} (type: journald) needs journalctl, which is not installed "
                "(the appliance image has it; elsewhere install systemd's journalctl)"
            )
        folder = self.spec.directory
        if not os.path.isdir(folder):
            raise MonitorError(
                f"directory {folder} does not exist: mount the host's journal there "
                "(-v /var/log/journal:/var/log/journal:ro; see docs/DEPLOY.md)"
            )
        if not os.access(folder, os.R_OK | os.X_OK):
            raise MonitorError(f"directory {folder} is not readable by Guard (user {os.getuid()})")
        return exe

    def command(self, *, follow: bool) -> list[str]:
        """The journalctl command reading from the current position."""
        cmd = [self._journalctl(), "--directory", self.spec.directory, "--output=json", "--all"]
        cmd += ["--no-pager", "--no-tail", f"--output-fields={','.join(FIELDS)}"]
        if follow:
            cmd.append("--follow")
        for unit in self.spec.units:
            cmd += ["--unit", unit]
        if self.spec.priority_level is not None:
            cmd += ["--priority", str(self.spec.priority_level)]
        if self._tail.cursor:  # not --after-cursor: with a filter the cursor's entry may not
            cmd += ["--cursor", self._tail.cursor]  # match, and journalctl 252 skips one more
        elif self._tail.since:
            cmd += ["--since", f"@{self._tail.since // 1_000_000}"]
        return cmd

    async def _spawn(self, follow: bool) -> asyncio.subprocess.Process:
        cmd = self.command(follow=follow)
        proc = await asyncio.create_subprocess_exec(
            *cmd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=CHUNK,
        )
        self._procs.add(proc)
        self._spawned = time.monotonic()
        _widen_pipe(proc)
        return proc

    async def _end(self, proc: asyncio.subprocess.Process, *, ending: bool = False) -> None:
        """Stop journalctl (``ending``: it closed its output; let it exit first, since killing
        polls, and a poll that reaps it leaves asyncio's watcher with no exit status)."""
        if ending:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(10):
                    await proc.wait()
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        with contextlib.suppress(Exception):
            await proc.wait()
        self._procs.discard(proc)

    # -- reading --------------------------------------------------------------------------------

    async def _read(self, proc: asyncio.subprocess.Process, emit: Emit | None) -> Observation:
        """Count the entries journalctl prints. Following (``emit``): emit each batch, until
        journalctl exits (``MonitorError``). Once: to its end, or ``MAX_BYTES_PER_CHECK``."""
        assert proc.stdout is not None and proc.stderr is not None
        errors = asyncio.create_task(_last_bytes(proc.stderr, STDERR_KEPT))
        limit = self.spec.max_line_bytes
        lines = Lines(6 * limit + TAIL)  # MESSAGE as JSON: up to 6 bytes per byte
        tally = self._tally()
        read, heard = 0, time.monotonic()
        chunk: bytes | None = None
        self._quiet = False
        try:
            while True:
                wait = self._tail.next_flush() if emit is not None else None
                if emit is not None:
                    left = heard + QUIET_RESTART - time.monotonic()
                    if left <= 0:
                        self._quiet = True
                        break
                    wait = left if wait is None else min(wait, left)
                    if self._broken is not None:  # healthy again once it has run a while
                        since = time.monotonic() - self._spawned
                        if chunk or since >= HEALTHY_AFTER:
                            self._broken = None
                        else:
                            wait = min(wait, HEALTHY_AFTER - since)
                try:  # not wait_for: in 3.11 it can swallow a cancel that meets a read
                    async with asyncio.timeout(wait):
                        chunk = await proc.stdout.read(CHUNK)
                except TimeoutError:
                    chunk = None
                read += len(chunk or b"")
                heard = time.monotonic() if chunk else heard
                parsed = (parse(*line, limit) for line in lines.feed(chunk or b""))
                entries = [e for e in parsed if e is not None]
                touched = self._tail.add(entries)
                if emit is None:  # once: everything to the end is complete
                    self._tail.count(tally, touched, final=chunk == b"")
                    if chunk == b"" or read >= MAX_BYTES_PER_CHECK:
                        break
                    continue
                self._tail.count(tally, touched)  # what is pending when journalctl ends waits
                signals = self._signals(tally)
                if signals or (entries and time.monotonic() - self._stored >= STATE_EVERY):
                    self._stored = time.monotonic()  # entries with no signal: read again if lost
                    await emit(Observation(signals, self._tail.state()))
                tally = self._tally()
                if chunk == b"":
                    break
        finally:
            await self._end(proc, ending=chunk == b"")
            stderr = (await errors).decode("utf-8", "replace").strip()
        if self._quiet:
            return Observation([])
        if emit is not None and proc.returncode == 0:  # it ended by itself: it cannot follow
            self._said = stderr
            return Observation([])
        if emit is not None or proc.returncode not in (0, -9):
            self._broken = f"journalctl exited with {proc.returncode}" + (
                f": {stderr}" if stderr else ""
            )
            if "insufficient permissions" in stderr:
                self._broken += (
                    f" (Guard's user {os.getuid()} cannot read the journal files: add their "
                    "group, --group-add; see docs/DEPLOY.md)"
                )
            if proc.returncode and self._tail.cursor and "cursor" in stderr.lower():
                since = _cursor_time(self._tail.cursor) or time.time_ns() // 1000
                self._tail.restore({"since": since})  # a cursor it cannot seek to: its time
                self._broken += " (the stored cursor is dropped: reading on from its time)"
            raise MonitorError(self._broken)
        return Observation(self._signals(tally), self._tail.state())

    def _tally(self) -> Any:
        from guard.monitors.logfile import Tally

        return Tally(self.id, "", source="journald")

    def _signals(self, tally: Any) -> list[Any]:
        """The tally's signals, saying which journal they are from (``recent_logs`` reads it)."""
        signals: list[Any] = tally.result()
        for sig in signals:
            sig.details["directory"] = self.spec.directory
        return signals

    async def follow(self, emit: Emit) -> None:
        """Count entries as journalctl prints them, until cancelled; raise when it exits. One
        that cannot follow (no inotify instance left, say: it prints "Reverting to -n" and
        ends) is run again every ``POLL_EVERY`` seconds instead, and follows once it can. One
        silent for ``QUIET_RESTART`` is started again (a journal file it could not watch is
        read then). Each run reads on after the last entry read; pending events are kept."""
        if not self._baselined:
            await asyncio.to_thread(self.baseline, {})
        self._following = True
        try:
            async with self._lock:
                self._tail.restore(self._tail.state())  # what was pending is read again
                while True:
                    proc = await self._spawn(follow=True)
                    await self._read(proc, emit)
                    self._broken = None  # it worked (and ended by itself, or went quiet)
                    if not self._quiet:  # it ended by itself: it cannot follow
                        await self._poll(emit)
                    self._tail.reopen()
        finally:
            self._following = False

    async def _poll(self, emit: Emit) -> None:
        """Wait ``POLL_EVERY`` before journalctl runs again, counting pending events as they
        become complete (said once: journalctl cannot follow)."""
        if not self._polling:
            logger.warning(
                "monitor {}: journalctl cannot follow the journal ({}); reading it every {}s",
                self.id,
                self._said or "it ended",
                POLL_EVERY,
            )
        self._polling = True
        deadline = time.monotonic() + POLL_EVERY
        while (left := deadline - time.monotonic()) > 0:
            await asyncio.sleep(min(left, self._tail.next_flush() or left))
            tally = self._tally()
            self._tail.count(tally, set())
            signals = self._signals(tally)
            if signals:
                await emit(Observation(signals, self._tail.state()))

    async def check(self, state: Mapping[str, Any]) -> Observation:
        self._journalctl()
        if self._following:
            if self._broken:
                raise MonitorError(self._broken)
            return Observation([])
        async with self._lock:
            if self._baselined:  # the runner's: resume where follow or the last check was
                self._tail.restore(self._tail.state())
            else:  # once, or verification: from the stored position, each time
                await asyncio.to_thread(self._start, state)
            return await self._read(await self._spawn(follow=False), None)

    async def close(self) -> None:
        for proc in list(self._procs):
            await self._end(proc)


def _widen_pipe(proc: asyncio.subprocess.Process) -> None:
    """Let journalctl write up to ``CHUNK`` ahead (Linux; the default pipe holds 64 KiB): on
    a busy machine each read costs a wake-up of both processes, so fewer, larger ones."""
    with contextlib.suppress(AttributeError, OSError, ValueError):
        pipe: Any = getattr(proc, "_transport").get_pipe_transport(1)  # noqa: B009
        fcntl.fcntl(
            pipe.get_extra_info("pipe").fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), CHUNK
        )


def _reader(directory: str) -> str | None:
    """journalctl, if it is installed and ``directory`` is there (None: not both)."""
    exe = shutil.which("journalctl")
    return exe if exe is not None and os.path.isdir(directory) else None


UNIT_SUFFIXES = (".service", ".scope", ".socket", ".timer", ".mount", ".slice", ".path", ".swap")


async def recent_entries(directory: str, target: str, lines: int, keep: int = 20000) -> str:
    """The last ``lines`` entries of a target (a unit, or a syslog identifier) as journalctl
    shows them (its last ``keep`` characters); ``MonitorError`` when they cannot be read."""
    exe = _reader(directory)
    if exe is None:
        raise MonitorError(f"cannot read the journal in {directory} (journalctl or the mount)")
    which = "--unit" if target.endswith(UNIT_SUFFIXES) else "--identifier"
    cmd = [exe, "--directory", directory, which, target, f"--lines={lines}", "--no-pager"]
    proc = await asyncio.create_subprocess_exec(
        *cmd, "--output=short-iso", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 30)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise MonitorError("journalctl took longer than 30s") from None
    if proc.returncode:
        raise MonitorError(f"journalctl exited with {proc.returncode}: {err.decode()[-500:]}")
    return line_tail(out.decode("utf-8", "replace"), keep) or "(no entries)"


def _cursor_time(cursor: str) -> int | None:
    """The realtime (microseconds) a journal cursor holds (``t=`` in hex), if any."""
    found = re.search(r"(?:^|;)t=([0-9a-f]+)(?:;|$)", cursor)
    return int(found.group(1), 16) if found else None


async def _last_bytes(stream: asyncio.StreamReader, keep: int) -> bytes:
    """Read a stream to its end; return its last ``keep`` bytes."""
    kept = b""
    while chunk := await stream.read(65536):
        kept = (kept + chunk)[-keep:]
    return kept
