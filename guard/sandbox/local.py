"""``LocalSandbox``: commands as plain subprocesses on the Guard host. Development only.

It isolates nothing: no network, filesystem, user or resource limits (``sandbox.backend: local``
is off by default and shouts when used). It keeps the same contract as ``DockerSandbox`` so
playbooks can be developed without Docker: capped and redacted output, a wall-clock timeout that
kills the command's whole process group, secrets passed through the environment, a private
scratch directory standing in for ``/workspace``. A command runs in its own session, so it does
not die with a Guard killed by ``kill -9``: each sandbox keeps a record (its scratch directory,
the running command's process group, the Guard that owns it) in ``OWNERS``, and
``reap_orphans`` kills what a dead Guard's records name and removes its directories.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from loguru import logger

from guard.config import SandboxSettings
from guard.domain.exceptions import SandboxError
from guard.redact import Redactor
from guard.sandbox.base import (
    TIMEOUT_EXIT_CODE,
    Command,
    ExecResult,
    OutputBuffer,
    SandboxGrants,
    argv,
)
from guard.sandbox.owners import (
    LABEL_HOST,
    LABEL_PID,
    LABEL_PID_STARTED,
    owner_alive,
    process_started,
)

OWNERS = Path(tempfile.gettempdir()) / "guard-local-owners"

_WARNING = (
    "!!! sandbox.backend=local: commands run UNSANDBOXED on this host, as Guard's own user, "
    "with its network and files. Use it for development only; set sandbox.backend: docker. !!!"
)


class LocalSandbox:
    """A ``Sandbox`` running commands with ``subprocess`` (see module docstring)."""

    def __init__(
        self,
        settings: SandboxSettings,
        *,
        incident_id: str,
        grants: SandboxGrants | None = None,
        secrets: Mapping[str, str] | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        logger.warning(_WARNING)
        self.settings = settings
        self.incident_id = incident_id
        self.grants = grants or SandboxGrants()
        if self.grants.network or self.grants.mounts:
            logger.warning("local sandbox cannot enforce network/mount grants; the host's apply")
        self._secrets = dict(secrets or {})
        self.redactor = redactor or Redactor()
        for name, value in self._secrets.items():
            self.redactor.register(name, value)
        self.workspace = tempfile.mkdtemp(prefix=f"guard-local-{incident_id[:20]}-")
        OWNERS.mkdir(mode=0o700, exist_ok=True)
        self._record = OWNERS / f"{os.path.basename(self.workspace)}.json"
        self._note(None)
        self._lock = asyncio.Lock()

    def _note(self, group: int | None) -> None:
        """Record this sandbox's directory, its running process group (if any) and its owner."""
        me = os.getpid()
        owner = {LABEL_HOST: socket.gethostname(), LABEL_PID: str(me)}
        owner[LABEL_PID_STARTED] = process_started(me)
        started = process_started(group) if group else ""
        record = {"workspace": self.workspace, "owner": owner, "group": group, "started": started}
        self._record.write_text(json.dumps(record))

    async def run(
        self,
        command: Command,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 (a per-command budget)
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
        stdin: bytes | str | None = None,
    ) -> ExecResult:
        cmd = argv(command)
        data = stdin.encode() if isinstance(stdin, str) else stdin
        environment = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self.workspace,
            "TMPDIR": self.workspace,
            **(env or {}),
            **self._secrets,
        }
        limit, slack = self.settings.output_limit, self.redactor.max_length
        out, err = OutputBuffer(limit, slack), OutputBuffer(limit, slack)
        async with self._lock:
            t0 = time.monotonic()
            try:
                proc = await asyncio.create_subprocess_exec(
                    *cmd,
                    stdin=asyncio.subprocess.DEVNULL if data is None else asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    cwd=workdir or self.workspace,
                    env=environment,
                    start_new_session=True,  # its own process group, so a timeout kills it all
                )
            except OSError as exc:
                return ExecResult(127, "", self.redactor.redact(str(exc)), time.monotonic() - t0)
            self._note(proc.pid)
            timed_out = False
            try:
                await asyncio.wait_for(
                    self._communicate(proc, data, out, err), timeout or self.settings.timeout
                )
            except TimeoutError:
                timed_out = True
            finally:
                if proc.returncode is None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    await proc.wait()
                self._note(None)
            code = TIMEOUT_EXIT_CODE if timed_out else proc.returncode
            if code is None:
                raise SandboxError("local command vanished without an exit status")
            # redacting up to output_limit of hostile text is CPU work: off the event loop
            stdout = await asyncio.to_thread(out.text, self.redactor)
            stderr = await asyncio.to_thread(err.text, self.redactor)
            return ExecResult(
                code if code >= 0 else 128 - code,
                stdout,
                stderr,
                time.monotonic() - t0,
                timed_out=timed_out,
                stdout_truncated=out.dropped,
                stderr_truncated=err.dropped,
            )

    @staticmethod
    async def _communicate(
        proc: asyncio.subprocess.Process, data: bytes | None, out: OutputBuffer, err: OutputBuffer
    ) -> None:
        async def pump(stream: asyncio.StreamReader | None, sink: OutputBuffer) -> None:
            while stream is not None and (chunk := await stream.read(65536)):
                sink.feed(chunk)

        async def feed() -> None:
            if proc.stdin is not None:
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    proc.stdin.write(data or b"")
                    await proc.stdin.drain()
                proc.stdin.close()

        await asyncio.gather(feed(), pump(proc.stdout, out), pump(proc.stderr, err))
        await proc.wait()

    async def close(self) -> None:
        await asyncio.to_thread(shutil.rmtree, self.workspace, True)
        self._record.unlink(missing_ok=True)


def reap_orphans() -> int:
    """Kill the commands and remove the directories of local sandboxes whose Guard is dead
    (a live Guard's are spared); return how many sandboxes were cleaned up."""
    removed = 0
    for path in OWNERS.glob("*.json"):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if owner_alive(record["owner"]):
            continue
        group = record.get("group")
        if group and record.get("started") == process_started(group):  # not a reused pid
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        shutil.rmtree(record["workspace"], ignore_errors=True)
        path.unlink(missing_ok=True)
        removed += 1
        logger.info("reaped an orphaned local sandbox: {}", record["workspace"])
    return removed
