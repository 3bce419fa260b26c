"""Engine-level pieces of the Docker backend: connecting, error translation, labels and orphan
reaping, host cgroup files, and the exec stream demultiplexer (``pump_exec_stream``).

``pump_exec_stream`` reads the raw hijacked socket in slices of at most 0.25 s so a deadline or
a cancellation is noticed promptly even when the command prints nothing, and hands each frame's
payload to a capped ``OutputBuffer`` without copying what the cap discards.
"""

from __future__ import annotations

import contextlib
import io
import re
import socket
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import docker
import requests
from docker.errors import DockerException, ImageNotFound, NotFound
from loguru import logger

from guard.domain.exceptions import SandboxError
from guard.sandbox.base import OutputBuffer
from guard.sandbox.owners import INSTANCE_ID, LABEL, LABEL_OWNER, owner_alive
from guard.util.docker_client import EngineUnreachable, Timeouts, docker_client

IDLE_SECONDS = 7 * 86400  # the idle sleep ends by itself, so even an unreaped orphan stops
OOM_LINE = re.compile(rb"^oom_kill (\d+)$", re.M)
_SLICE = 0.25  # how often a blocked read wakes to check for cancellation


def connect(timeout: float = Timeouts.sandbox) -> docker.DockerClient:
    """A client for the engine named by ``DOCKER_HOST`` (default: the local socket)."""
    try:
        client: docker.DockerClient = docker_client(timeout)
    except EngineUnreachable as exc:  # it names DOCKER_HOST and the fix for its kind
        raise SandboxError(str(exc)) from None
    return client


def translate(exc: Exception, image: str = "", network: str | None = None) -> SandboxError:
    """A ``SandboxError`` that says what to do about a docker SDK failure."""
    if isinstance(exc, ImageNotFound) or (
        isinstance(exc, NotFound) and image and "No such image" in str(exc)
    ):
        return SandboxError(
            f"sandbox image {image!r} is missing: run `guard sandbox build --offline` "
            "(or `guard sandbox build` where a registry is reachable)"
        )
    if isinstance(exc, NotFound) and network and "network" in str(exc).lower():
        return SandboxError(
            f"granted network {network!r} does not exist: create it (`docker network create "
            f"{network}`) or fix the playbook's sandbox grant"
        )
    if isinstance(exc, requests.RequestException):
        return SandboxError(f"lost the Docker engine ({exc}): is it still running?")
    detail = getattr(exc, "explanation", None) or str(exc)
    return SandboxError(f"docker engine refused a sandbox operation: {detail}")


def reap_orphans(
    client: docker.DockerClient,
    *,
    only_dead_owners: bool = False,
    labels: Mapping[str, str] | None = None,
) -> int:
    """Remove Guard sandbox containers left behind; return how many were removed.

    By default every labelled container not owned by this process goes (call it at startup:
    after a crash nothing of ours is alive). ``only_dead_owners`` spares containers whose owner
    may still be running (another host, or a live PID here): for one-shot CLI commands.
    ``labels`` narrows the sweep to containers that also carry these labels (e.g. one incident).
    """
    removed = 0
    try:
        wanted = [f"{LABEL}=1", *(f"{k}={v}" for k, v in (labels or {}).items())]
        found = client.api.containers(all=True, filters={"label": wanted})
        for info in found:
            tags: dict[str, str] = info.get("Labels") or {}
            if tags.get(LABEL_OWNER) == INSTANCE_ID:
                continue
            if only_dead_owners and owner_alive(tags):
                continue
            with contextlib.suppress(NotFound):
                client.api.remove_container(info["Id"], force=True)
                removed += 1
                logger.info("reaped orphaned sandbox {} ({})", info["Id"][:12], tags)
    except (DockerException, requests.RequestException) as exc:
        raise translate(exc) from None
    return removed


def host_cgroup_files(cid: str, v1: str, v1_file: str, v2_file: str) -> list[Path]:
    """Where the container's cgroup file may be on this host (v1/v2, cgroupfs/systemd)."""
    root = Path("/sys/fs/cgroup")
    return [
        root / v1 / "docker" / cid / v1_file,
        root / v1 / "system.slice" / f"docker-{cid}.scope" / v1_file,
        root / "system.slice" / f"docker-{cid}.scope" / v2_file,
        root / "docker" / cid / v2_file,
    ]


def exec_stream(sock: Any) -> tuple[socket.socket, bytes]:
    """The socket of ``exec_start(socket=True)``'s hijacked stream, and what of the stream the
    HTTP client already read. docker-py reads the answer's headers through a buffered reader
    and hands out the socket beneath it: frames that came in the same read as the headers (a
    remote engine, a slow link, a loaded host) sit in that buffer, and reading the socket alone
    lost them (empty or garbled output; docker/docker-py#3332)."""
    raw: socket.socket = getattr(sock, "_sock", sock)
    response = getattr(sock, "_response", None)
    reader = getattr(getattr(getattr(response, "raw", None), "_fp", None), "fp", None)
    if not isinstance(reader, io.BufferedReader):
        return raw, b""
    timeout = raw.gettimeout()
    raw.setblocking(False)  # peek: the buffer, or what one read finds now, never a wait
    try:
        early = reader.peek()
    except OSError:  # nothing buffered, nothing on the line yet (TLS: SSLWantReadError)
        early = b""
    finally:
        raw.settimeout(timeout)
    return raw, reader.read1(len(early)) if early else b""


def pump_exec_stream(
    raw: socket.socket,
    stdin: bytes | None,
    out: OutputBuffer,
    err: OutputBuffer,
    deadline: float,
    abort: threading.Event,
    early: bytes = b"",
) -> bool:
    """Demultiplex a hijacked, non-tty exec socket into ``out``/``err`` (frames are an 8-byte
    header: stream id, 3 zero bytes, big-endian length), after the ``early`` bytes of the
    stream already read (see ``exec_stream``), feeding ``stdin`` from a side thread.
    True at end of stream; False once ``deadline`` passes or ``abort`` is set."""
    if stdin is not None:

        def feed() -> None:
            with contextlib.suppress(OSError):
                raw.sendall(stdin)
                raw.shutdown(socket.SHUT_WR)

        threading.Thread(target=feed, daemon=True, name="sandbox-stdin").start()
    buf = bytearray(early)
    sinks = {1: out, 2: err}
    while True:
        view, pos = memoryview(buf), 0
        while len(buf) - pos >= 8:
            size = int.from_bytes(view[pos + 4 : pos + 8], "big")
            if len(buf) - pos - 8 < size:
                break
            sink = sinks.get(buf[pos])
            if sink is not None:
                sink.feed(view[pos + 8 : pos + 8 + size])
            pos += 8 + size
        view.release()
        del buf[:pos]
        remaining = deadline - time.monotonic()
        if remaining <= 0 or abort.is_set():
            return False
        raw.settimeout(min(remaining, _SLICE))
        try:
            chunk = raw.recv(262144)
        except TimeoutError:
            continue
        if not chunk:
            return True
        buf += chunk
