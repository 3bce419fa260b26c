"""``DockerSandbox``: one warm, locked-down container per incident; a command is a docker exec.

Design:

* The container is created on first use (or ``start()``) with every hardening option set (see
  ``_host_config``) and idles as ``sleep`` under docker-init, which reaps stray children. Each
  command is ``exec_create`` + a hijacked ``exec_start`` socket + ``exec_inspect``: the same
  three calls a bare ``docker exec`` makes, so a warm command costs what ``docker exec`` costs.
* Output is read frame by frame off the exec socket and fed to capped ``OutputBuffer``s, so a
  command printing 100 MB never sits in Guard's memory.
* A timeout (or cancellation) kills the whole container: docker has no "kill exec", and killing
  the container is the only way to be sure every process the command forked is gone. The next
  command of the incident gets a fresh container (``/workspace`` does not survive a timeout).
* OOM kills of an exec'd process do not set ``State.OOMKilled`` (that is only for PID 1), so after
  a failing command the memory cgroup's ``oom_kill`` counter is compared with its last value,
  read from the host's cgroup files when visible, else via ``cat`` inside the container.
* A command's processes do not outlive it: if any are left running when it ends (a daemon, a
  fork bomb), the container is reset. Counting them reads the host's ``pids.current`` when
  visible, else asks the engine (``top``).
* Grants are re-checked at creation: mount sources are resolved and checked again (a symlink
  may have changed since the playbook loaded) and the real path is what gets mounted; a granted
  network that is not ``internal`` logs a warning once, since it routes beyond the host.
* Containers carry ``guard.sandbox=1`` plus owner/incident labels; ``reap_orphans`` removes the
  ones a crashed Guard left behind.

All docker SDK calls are blocking; ``run``/``start``/``close`` push them to a worker thread.
Engine plumbing (connecting, labels and reaping, the exec stream demultiplexer) is in
``engine.py``; its names are re-exported here.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets as _secrets
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any

import docker
import requests
from docker.errors import APIError, DockerException, NotFound
from docker.types import LogConfig, Mount, Ulimit
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
    in_worker,
)
from guard.sandbox.engine import (
    IDLE_SECONDS,
    OOM_LINE,
    connect,
    exec_stream,
    host_cgroup_files,
    pump_exec_stream,
    reap_orphans,
    translate,
)
from guard.sandbox.owners import (
    INSTANCE_ID,
    LABEL,
    LABEL_HOST,
    LABEL_INCIDENT,
    LABEL_OWNER,
    LABEL_PID,
    LABEL_PID_STARTED,
    process_started,
)

__all__ = [
    "INSTANCE_ID",
    "LABEL",
    "LABEL_HOST",
    "LABEL_INCIDENT",
    "LABEL_OWNER",
    "LABEL_PID",
    "LABEL_PID_STARTED",
    "DockerSandbox",
    "connect",
    "reap_orphans",
]

_warned_networks: set[str] = set()  # ids of non-internal networks already warned about
_warned_lock = threading.Lock()


class DockerSandbox:
    """The ``Sandbox`` of one incident, backed by one warm container (see module docstring)."""

    def __init__(
        self,
        settings: SandboxSettings,
        *,
        incident_id: str,
        grants: SandboxGrants | None = None,
        secrets: Mapping[str, str] | None = None,
        redactor: Redactor | None = None,
        client: docker.DockerClient | None = None,
        image: str | None = None,
    ) -> None:
        self.settings = settings
        self.incident_id = incident_id
        self.grants = grants or SandboxGrants()
        self.image = image or settings.image
        self._secrets = dict(secrets or {})
        missing = set(self.grants.secrets) - set(self._secrets)
        if missing:
            raise SandboxError(f"no value given for granted secret(s) {sorted(missing)}")
        self.redactor = redactor or Redactor()
        for name, value in self._secrets.items():
            self.redactor.register(name, value)
        self._client = client
        self._cid: str | None = None
        self._oom_seen = 0
        self._lock = asyncio.Lock()
        self._closed = False

    @property
    def container_id(self) -> str | None:
        """The warm container's id, if one is running."""
        return self._cid

    @property
    def api(self) -> Any:
        if self._client is None:
            self._client = connect()
        return self._client.api

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> float:
        """Create and start the warm container now; return how long that took (seconds)."""
        async with self._lock:
            t0 = time.monotonic()
            await asyncio.to_thread(self._ensure)
            return time.monotonic() - t0

    async def close(self) -> None:
        async with self._lock:
            self._closed = True
            await asyncio.to_thread(self._discard)

    def _host_config(self) -> Any:
        s, g = self.settings, self.grants
        # The engine copies the image's directory mode onto a tmpfs; owning it fixes that.
        tmpfs_opts = f"size={s.tmpfs_size},mode=1777"
        uid, _, gid = s.user.partition(":")
        if uid.isdigit():
            tmpfs_opts += f",uid={uid}" + (f",gid={gid}" if gid.isdigit() else "")
        return self.api.create_host_config(
            network_mode=g.network or "none",
            read_only=True,
            tmpfs={"/tmp": tmpfs_opts, "/workspace": tmpfs_opts},
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            privileged=False,
            pids_limit=s.pids,
            mem_limit=s.memory,
            memswap_limit=s.memory,
            nano_cpus=int(s.cpus * 1e9),
            init=True,
            ipc_mode="private",
            ulimits=[
                Ulimit(name="nofile", soft=1024, hard=1024),
                Ulimit(name="core", soft=0, hard=0),
            ],
            log_config=LogConfig(type="none"),
            mounts=[
                # The real path, re-checked now: what was checked is what gets mounted.
                Mount(target=m.target, source=m.host_source(), type="bind", read_only=True)
                for m in g.mounts
            ],
        )

    def _ensure(self) -> str:
        if self._closed:
            raise SandboxError(f"sandbox of incident {self.incident_id} is closed")
        if self._cid is not None:
            return self._cid
        safe = re.sub(r"[^A-Za-z0-9_.-]", "-", self.incident_id)[:40]
        labels = {
            LABEL: "1",
            LABEL_OWNER: INSTANCE_ID,
            LABEL_INCIDENT: self.incident_id,
            LABEL_HOST: socket.gethostname(),
            LABEL_PID: str(os.getpid()),
            LABEL_PID_STARTED: process_started(os.getpid()),
        }
        try:
            if self.grants.network:
                self._check_network(self.grants.network)
            created = self.api.create_container(
                self.image,
                entrypoint=["sleep"],
                command=[str(IDLE_SECONDS)],
                user=self.settings.user,
                working_dir="/workspace",
                hostname="sandbox",
                labels=labels,
                name=f"guard-sbx-{safe}-{_secrets.token_hex(3)}",
                host_config=self._host_config(),
            )
            cid: str = created["Id"]
            self._cid = cid
            self.api.start(cid)
        except (DockerException, requests.RequestException) as exc:
            self._discard()
            raise translate(exc, self.image, self.grants.network) from None
        self._oom_seen = 0
        logger.debug("sandbox {} up for incident {}", cid[:12], self.incident_id)
        return cid

    def _check_network(self, name: str) -> None:
        """Warn (once per network) when a granted network is not ``internal``.

        The engine forwards a non-internal network's traffic, so the sandbox reaches whatever
        the Docker host can route to: the LAN, the internet. (Services listening on the host's
        own addresses are reachable from internal networks too: see docs/SANDBOX.md.) Raises
        ``NotFound`` if the network does not exist.
        """
        info = self.api.inspect_network(name)
        if info.get("Internal"):
            return
        with _warned_lock:
            if info["Id"] in _warned_networks:
                return
            _warned_networks.add(info["Id"])
        logger.warning(
            "sandbox network grant {!r} is not an internal Docker network: sandboxed commands "
            "can reach whatever it reaches (the host through its gateway, other hosts, the "
            "internet). To keep egress closed, recreate it with `docker network create "
            "--internal {}` and attach only the services the commands need",
            name,
            name,
        )

    def _discard(self, cid: str | None = None) -> None:
        """Remove container ``cid`` (default: the current one), forgetting it if current."""
        cid = cid or self._cid
        if cid is None:
            return
        if cid == self._cid:
            self._cid = None
        try:
            self.api.remove_container(cid, force=True)
        except NotFound:
            pass
        except (DockerException, requests.RequestException) as exc:
            logger.warning("could not remove sandbox {}: {} (reap_orphans will)", cid[:12], exc)

    # -- commands --------------------------------------------------------------------------

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
        budget = timeout or self.settings.timeout
        async with self._lock:  # held until a cancelled command's container is really gone
            return await in_worker(
                lambda abort: self._run_sync(cmd, budget, env or {}, workdir, data, abort)
            )

    def _run_sync(
        self,
        cmd: list[str],
        timeout: float,
        env: Mapping[str, str],
        workdir: str | None,
        stdin: bytes | None,
        abort: threading.Event,
    ) -> ExecResult:
        if stdin is not None and str(self.api.base_url).startswith("https://"):
            from guard.sandbox.tls_input import stdin_in_env

            cmd, carried = stdin_in_env(cmd, stdin)  # no half-close over TLS: see there
            env, stdin = {**env, **carried}, None
        environment = [f"{k}={v}" for k, v in {**env, **self._secrets}.items()]
        for attempt in (1, 2):
            cid = self._ensure()
            t0 = time.monotonic()  # a cold start does not eat into the command's budget
            try:
                exec_id: str = self.api.exec_create(
                    cid,
                    cmd,
                    stdin=stdin is not None,
                    environment=environment,
                    workdir=workdir or "/workspace",
                    user=self.settings.user,
                )["Id"]
                sock = self.api.exec_start(exec_id, socket=True)
                break
            except APIError as exc:
                if attempt == 1 and exc.status_code in (404, 409):  # gone or stopped: renew it
                    self._discard(cid)
                    continue
                raise translate(exc, self.image) from None
            except (DockerException, requests.RequestException) as exc:
                raise translate(exc, self.image) from None
        out = OutputBuffer(self.settings.output_limit, self.redactor.max_length)
        err = OutputBuffer(self.settings.output_limit, self.redactor.max_length)
        raw, early = exec_stream(sock)
        try:
            finished = pump_exec_stream(raw, stdin, out, err, t0 + timeout, abort, early)
        finally:
            raw.close()
        if not finished:
            self._discard(cid)
            return ExecResult(
                TIMEOUT_EXIT_CODE,
                out.text(self.redactor),
                err.text(self.redactor),
                time.monotonic() - t0,
                timed_out=True,
                stdout_truncated=out.dropped,
                stderr_truncated=err.dropped,
            )
        try:
            code = self._exit_code(exec_id)
        except (DockerException, requests.RequestException, SandboxError) as exc:
            self._discard(cid)  # the container died under the command (killed, removed)
            raise SandboxError(f"the sandbox container died during the command: {exc}") from None
        duration = time.monotonic() - t0
        oom = code != 0 and self._oom_happened(cid)
        if stray := self._stray_processes(cid):
            logger.warning("command left {} process(es) running; resetting the sandbox", stray)
            self._discard(cid)
        return ExecResult(
            code,
            out.text(self.redactor),
            err.text(self.redactor),
            duration,
            oom_killed=oom,
            stdout_truncated=out.dropped,
            stderr_truncated=err.dropped,
        )

    def _exit_code(self, exec_id: str) -> int:
        # The stream can end a moment before the engine records the exit; wait for it briefly.
        for _ in range(100):
            info = self.api.exec_inspect(exec_id)
            if not info.get("Running") and info.get("ExitCode") is not None:
                return int(info["ExitCode"])
            time.sleep(0.01)
        raise SandboxError("the engine never reported the command's exit code")

    def _stray_processes(self, cid: str) -> int:
        """Processes still running besides docker-init and the idle sleep (0 if unknown)."""
        for path in host_cgroup_files(cid, "pids", "pids.current", "pids.current"):
            with contextlib.suppress(OSError, ValueError):
                return max(0, int(path.read_text()) - 2)
        try:  # Guard itself in a container: ask the engine (one `ps` on the host, ~30 ms)
            return max(0, len(self.api.top(cid)["Processes"]) - 2)
        except (DockerException, requests.RequestException, KeyError, TypeError):
            return 0

    def _oom_count(self, cid: str) -> int | None:
        for path in host_cgroup_files(cid, "memory", "memory.oom_control", "memory.events"):
            with contextlib.suppress(OSError):
                found = OOM_LINE.search(path.read_bytes())
                return int(found.group(1)) if found else None
        probe = "cat /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control"
        try:
            exec_id = self.api.exec_create(cid, ["/bin/sh", "-c", probe + " 2>/dev/null"])["Id"]
            found = OOM_LINE.search(self.api.exec_start(exec_id))
        except (DockerException, requests.RequestException) as exc:
            logger.warning("could not read the sandbox's OOM counter: {}", exc)
            return None
        return int(found.group(1)) if found else None

    def _oom_happened(self, cid: str) -> bool:
        count = self._oom_count(cid)
        if count is None or count <= self._oom_seen:
            return False
        self._oom_seen = count
        return True
