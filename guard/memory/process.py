"""Semantic memory in a helper process that exists only while it is being used.

LanceDB and pyarrow cost about 150 MB of resident memory once imported, more than the rest of
``guard run`` together, and they are native code: a crash in them would take the watchdog down
with it. ``MemoryProcess`` keeps them in a child (``python -m guard.memory.process``), started
in the background when Guard starts with incidents to recall (``warm``: so the first recall
does not wait for the import), else by the first recall or store (until something is stored, a
recall finds nothing without one), and ended after
``memory.idle_timeout`` without a recall, so an idle appliance stays small and a native crash
costs one recall, not the appliance.

The protocol is one JSON object a line: requests on the child's stdin, answers on a private
copy of its stdout (the child points fd 1 at stderr, so a library that prints cannot corrupt
the channel). Both calls are idempotent (``remember`` replaces the incident's row), so a child
that was leaving for idleness just as a request arrived is answered by a fresh child.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import IO, Any

from loguru import logger

from guard.domain.exceptions import GuardError
from guard.memory.semantic import TABLE, Recollection, SemanticMemory

ANSWER_TIMEOUT = 60.0  # a search or an insert; the first one imports LanceDB (a few seconds)
COOLDOWN = 60.0  # after the helper crashed or hung, calls fail at once for this long


class MemoryUnavailable(GuardError):
    """The memory process could not answer (it crashed, hung or could not start)."""


class MemoryRequestFailed(MemoryUnavailable):
    """The memory process answered, with an error (LanceDB refused this request)."""


def _incident_fields(incident: Any) -> dict[str, Any]:
    return {
        "id": int(incident.id),
        "title": incident.title,
        "message": incident.message,
        "source": incident.source,
        "kind": incident.kind,
        "target": incident.target,
    }


class MemoryProcess:
    """``SemanticMemory``'s interface, served by a child process that leaves when idle."""

    command: tuple[str, ...] = (sys.executable, "-m", "guard.memory.process")  # tests swap it

    def __init__(
        self,
        folder: Path,
        *,
        idle_timeout: float = 600.0,
        answer_timeout: float = ANSWER_TIMEOUT,
        cooldown: float = COOLDOWN,
    ) -> None:
        self.folder = folder
        self.idle_timeout = idle_timeout
        self.answer_timeout = answer_timeout
        self.cooldown = cooldown
        self._down_until = 0.0  # a helper that cannot work is not restarted for every call
        self._down_reason = ""
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        """The child's pid while it runs."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def warm(self) -> None:
        """Start the child and let it import LanceDB and open the table now (in a thread of
        its caller: it takes a second or more); it still leaves after ``idle_timeout``. With
        nothing remembered yet there is nothing to recall: no child is started."""
        if self._remembers_any():
            self._call({"op": "warm"})

    def remember(self, incident: Any, *, resolution: str, skill: str = "") -> None:
        """Store (or replace) what resolved ``incident``."""
        self._call(
            {
                "op": "remember",
                "incident": _incident_fields(incident),
                "resolution": resolution,
                "skill": skill,
            }
        )

    def search(self, text: str, limit: int = 5) -> list[Recollection]:
        """Past incidents most similar to ``text``, best first. With nothing remembered yet
        there is nothing to find: no child is started (its import costs seconds of CPU)."""
        if not self._remembers_any():
            return []
        rows = self._call({"op": "search", "text": text, "limit": limit})
        return [Recollection(**row) for row in rows]

    def _remembers_any(self) -> bool:
        """Whether anything was ever remembered here (LanceDB made the table's folder)."""
        return (self.folder / f"{TABLE}.lance").exists()

    def close(self) -> None:
        """End the child (it also ends by itself when Guard dies: its stdin closes)."""
        with self._lock:
            self._stop()

    # -- the channel ----------------------------------------------------------------------------

    def _call(self, request: dict[str, Any]) -> Any:
        with self._lock:
            if time.monotonic() < self._down_until:
                raise MemoryUnavailable(
                    f"{self._down_reason} (not retried for "
                    f"{self._down_until - time.monotonic():.0f}s more)"
                )
            try:
                return self._attempts(request)
            except MemoryRequestFailed:
                raise  # the helper works; this request failed
            except MemoryUnavailable as exc:
                # an incident storm must not start a helper per recall: pause, then try again
                self._down_until = time.monotonic() + self.cooldown
                self._down_reason = str(exc)
                logger.warning(
                    "semantic memory unavailable: {}; Guard goes on without it for {:g}s",
                    exc,
                    self.cooldown,
                )
                raise

    def _attempts(self, request: dict[str, Any]) -> Any:
        for attempt in (1, 2):
            proc = self._ensure()
            try:
                return self._exchange(proc, request)
            except (BrokenPipeError, EOFError) as exc:
                # it left (idle, or crashed); both requests are safe to send again
                self._stop()
                code = proc.returncode
                if attempt == 2:
                    raise MemoryUnavailable(
                        f"the memory process exited ({code}) before answering"
                    ) from exc
        raise AssertionError("unreachable")

    def _ensure(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        self._proc = subprocess.Popen(
            [*self.command, str(self.folder), str(self.idle_timeout)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )
        logger.debug("memory process {} started", self._proc.pid)
        return self._proc

    def _exchange(self, proc: subprocess.Popen[bytes], request: dict[str, Any]) -> Any:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(request).encode() + b"\n")
        proc.stdin.flush()
        line = _read_line(proc.stdout, self.answer_timeout)
        if line is None:
            proc.kill()  # hung: it gets no second chance; the next call starts a new one
            self._stop()
            raise MemoryUnavailable(
                f"the memory process did not answer in {self.answer_timeout:g}s"
            )
        if not line:
            raise EOFError
        answer = json.loads(line)
        if "error" in answer:
            raise MemoryRequestFailed(answer["error"])
        return answer["result"]

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            assert proc.stdin is not None
            proc.stdin.close()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _read_line(stream: IO[bytes], timeout: float) -> bytes | None:
    """One line from ``stream``; ``b""`` at end of file; ``None`` when ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([stream], [], [], left)
        if ready:
            return stream.readline()


# -- the child ----------------------------------------------------------------------------------


def _serve(folder: Path, idle_timeout: float) -> int:
    answers = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # anything a library prints goes to stderr, never into the answers
    memory = SemanticMemory(folder)
    requests = sys.stdin.buffer
    while True:
        ready, _, _ = select.select([requests], [], [], idle_timeout)
        if not ready:
            return 0  # idle: give the memory back; the next recall starts a new child
        line = requests.readline()
        if not line:
            return 0  # Guard closed the channel (or died)
        try:
            answer = {"result": _handle(memory, json.loads(line))}
        except Exception as exc:
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        answers.write(json.dumps(answer).encode() + b"\n")


def _handle(memory: SemanticMemory, request: dict[str, Any]) -> Any:
    if request["op"] == "warm":
        memory.warm()
        return None
    if request["op"] == "search":
        return [vars(r) for r in memory.search(request["text"], limit=int(request["limit"]))]
    if request["op"] == "remember":
        memory.remember(
            SimpleNamespace(**request["incident"]),
            resolution=request["resolution"],
            skill=request["skill"],
        )
        return None
    raise ValueError(f"unknown memory request {request['op']!r}")


if __name__ == "__main__":
    import atexit
    import gc

    atexit.register(gc.freeze)  # no last walk of LanceDB's and pyarrow's objects (guard.cli)
    sys.exit(_serve(Path(sys.argv[1]), float(sys.argv[2])))
