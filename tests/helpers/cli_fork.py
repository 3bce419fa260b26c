"""``guard ARGS`` in a process forked from one that has imported Guard's libraries already.

A ``guard`` command spends most of its second importing SQLAlchemy, pydantic, Typer, Rich and
Guard's own modules (their pydantic models and regular expressions are built at import), and
the suite runs thousands of them, most while polling for a condition: CPU that two cores share
with everything else the tests run (sampled in CI: the commands were the largest share of it).
``run`` hands the command to a fork server (one per test process, started on first use): a
Python process that imported those libraries and every Guard module, built what every command
builds first and keeps (``_warm``), then waits. Each command is a fresh child of it,
with the caller's arguments, environment, working folder and pipes, that runs ``python -m
guard.cli`` as the interpreter would (``runpy``) and runs every exit handler as the
interpreter would, then leaves without the interpreter's teardown (``_skip_teardown``). Guard's modules read the environment when used, not at import (``GUARD_CRASH_AT``
included), so the child sees the command's. ``tests/cli/test_cli_fork.py`` compares forked
commands with plain ones; ``GUARD_TEST_CLI_FORK=0`` runs every command as a plain subprocess.
``spawn`` starts one in the background (``guard run``: its start-up was a third of the suite's
CPU, sampled in CI, and the commands another third) and returns a ``Popen``-like handle.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import locale
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# imported by the server before it forks: third-party only, and none starts a thread
PRELOAD = (
    "sqlalchemy",
    "sqlalchemy.orm",
    "sqlalchemy.dialects.sqlite",
    "sqlmodel",
    "pydantic",
    "pydantic_settings",
    "typer",
    "rich.console",
    "rich.table",
    "yaml",
    "loguru",
    "re2",
)
_INT = struct.Struct("!i")


def run(
    args: list[str], *, cwd: Path, env: Mapping[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """``python -m guard.cli ARGS``, as ``subprocess.run(..., capture_output=True, text=True)``."""
    argv = [sys.executable, "-m", "guard.cli", *args]
    if (server := _server_for(env)) is None:
        return subprocess.run(
            argv, cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=timeout
        )
    return server.run(args, cwd=cwd, env=env, timeout=timeout)


def spawn(args: list[str], *, cwd: Path, env: Mapping[str, str], out: int) -> Process:
    """``python -m guard.cli ARGS`` in the background (``guard run``), its output and errors
    to the file descriptor ``out``, as ``subprocess.Popen`` would start it."""
    argv = [sys.executable, "-m", "guard.cli", *args]
    if (server := _server_for(env)) is None:
        return subprocess.Popen(argv, cwd=cwd, env=dict(env), stdout=out, stderr=subprocess.STDOUT)
    conn, pid = server.start(args, cwd=cwd, env=env, fds=(out, out))
    return Forked(conn, pid, argv)


def _server_for(env: Mapping[str, str]) -> _Server | None:
    """The fork server, or None for a plain subprocess: the server imported docker without its
    SSH transport (guard/__init__.py), so a command for an engine over SSH runs plain."""
    return None if env.get("DOCKER_HOST", "").startswith("ssh://") else _server()


class Forked:
    """A command the server forked, with the part of ``subprocess.Popen`` the tests use: its
    exit status comes over the connection (none: it was killed, reported as SIGKILL)."""

    def __init__(self, conn: socket.socket, pid: int, args: list[str]) -> None:
        self.conn = conn
        self.pid = pid
        self.args = args
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.conn.setblocking(False)  # a timeout left by wait() would block the peek
            try:
                data = self.conn.recv(_INT.size, socket.MSG_PEEK)
            except BlockingIOError:
                return None
            except OSError:
                data = b""
            if data and len(data) < _INT.size:
                return None
            self.wait()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.conn.settimeout(timeout)
            try:
                self.returncode = _read_int(self.conn)
            except TimeoutError:
                raise subprocess.TimeoutExpired(self.args, timeout or 0) from None
            except OSError:
                self.returncode = -signal.SIGKILL  # killed before it could say
            self.conn.close()
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


Process = Forked | subprocess.Popen[bytes]  # what ``spawn`` starts


class _Server:
    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="guard-cli-fork-")
        self.path = os.path.join(self.folder, "s")
        self.proc = subprocess.Popen(
            [sys.executable, __file__, self.path],
            stdin=subprocess.PIPE,  # its end: the server exits when this process does
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError("the guard CLI fork server did not start")
        atexit.register(self.close)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):  # else a warning each at exit
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()

    def start(
        self, args: list[str], *, cwd: Path, env: Mapping[str, str], fds: tuple[int, int]
    ) -> tuple[socket.socket, int]:
        """Fork ``guard ARGS`` with ``fds`` as its output and errors: (its connection, pid)."""
        null = os.open(os.devnull, os.O_RDONLY)
        request = json.dumps({"args": args, "cwd": str(cwd), "env": dict(env)}).encode()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(self.path)
            socket.send_fds(conn, [_INT.pack(len(request))], [null, *fds])
            conn.sendall(request)
            return conn, _read_int(conn)
        except BaseException:
            conn.close()
            raise
        finally:
            os.close(null)

    def run(
        self, args: list[str], *, cwd: Path, env: Mapping[str, str], timeout: float
    ) -> subprocess.CompletedProcess[str]:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            started = self.start(args, cwd=cwd, env=env, fds=(out_w, err_w))
        finally:
            os.close(out_w)
            os.close(err_w)
        conn, pid = started
        with conn:
            outputs: dict[int, bytes] = {}
            readers = [
                threading.Thread(target=_drain, args=(fd, outputs), daemon=True)
                for fd in (out_r, err_r)
            ]
            for t in readers:
                t.start()
            conn.settimeout(timeout)
            try:
                code = _read_int(conn)
            except TimeoutError:
                _kill(pid)
                for t in readers:
                    t.join()
                argv = [sys.executable, "-m", "guard.cli", *args]
                raise subprocess.TimeoutExpired(
                    argv, timeout, outputs.get(out_r), outputs.get(err_r)
                ) from None
            except ConnectionError:
                code = -signal.SIGKILL  # killed before it could say (as a signal would show)
            except BaseException:  # the test's own time limit, say: as subprocess.run does
                _kill(pid)
                raise
            for t in readers:
                t.join()
        argv = [sys.executable, "-m", "guard.cli", *args]
        return subprocess.CompletedProcess(
            argv, code, _text(outputs.get(out_r, b"")), _text(outputs.get(err_r, b""))
        )


def _drain(fd: int, into: dict[int, bytes]) -> None:
    chunks = []
    with os.fdopen(fd, "rb") as f:
        while chunk := f.read1(65536):
            chunks.append(chunk)
    into[fd] = b"".join(chunks)


def _text(data: bytes) -> str:
    """As ``subprocess`` decodes a captured stream in text mode (universal newlines)."""
    wrapper = io.TextIOWrapper(io.BytesIO(data), encoding=locale.getpreferredencoding(False))
    return wrapper.read()


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _read_int(conn: socket.socket) -> int:
    data = b""
    while len(data) < _INT.size:
        chunk = conn.recv(_INT.size - len(data))
        if not chunk:
            raise ConnectionResetError("the command ended without its exit status")
        data += chunk
    (value,) = _INT.unpack(data)
    return int(value)


_lock = threading.Lock()
_started: list[_Server | None] = []


def _server() -> _Server | None:
    if os.environ.get("GUARD_TEST_CLI_FORK", "1") == "0":
        return None
    with _lock:
        if not _started or (_started[0] is not None and _started[0].proc.poll() is not None):
            try:
                _started[:] = [_Server()]
            except (OSError, RuntimeError):
                _started[:] = [None]  # plain subprocesses from now on
        return _started[0]


# -- the server (this file run as a script) ------------------------------------------------------


_status: list[int] = []  # in a forked command: its exit status, once reported


def _skip_teardown() -> None:
    """A forked command's last exit handler (the server registers it before anything else):
    every other handler has run and the status is reported. The interpreter's teardown would
    now release each object the server built, writing to (and so copying) nearly every page of
    its heap: 0.17 s of CPU per command, most of a `guard incidents list`'s, measured."""
    if _status:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(_status[0])


def _serve(path: str) -> None:
    import gc
    import importlib
    import pkgutil

    atexit.register(_skip_teardown)  # first: the last to run, in every command forked
    with contextlib.suppress(OSError):
        Path("/proc/self/comm").write_text("g-forkserver")

    for name in PRELOAD:
        importlib.import_module(name)
    try:  # a module that fails to import fails the command that needs it, in its child
        import guard

        # every Guard module, and so the libraries they import when used (a `guard run` went
        # on to import ~1,000 more modules: aiohttp, uvicorn, telegram, docker...)
        for module in pkgutil.walk_packages(guard.__path__, "guard."):
            if not module.name.endswith(".__main__"):  # runpy runs guard.cli's in the child
                with contextlib.suppress(Exception):
                    importlib.import_module(module.name)
        _warm()
    except Exception:
        pass
    if threading.active_count() > 1:  # a fork copies only the calling thread: unsafe
        raise SystemExit("an import started a thread: the fork server cannot fork safely")
    gc.freeze()  # out of the collector's sight: a child's collection no longer walks them all
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the commands
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    print("ready", flush=True)
    while True:
        ready, _, _ = select.select([listener, sys.stdin], [], [])
        if sys.stdin in ready and not os.read(sys.stdin.fileno(), 1):
            return  # the test process is gone
        if listener not in ready:
            continue
        conn, _ = listener.accept()
        data, fds, _, _ = socket.recv_fds(conn, _INT.size, 3)
        (size,) = _INT.unpack(data)
        request = b""
        while len(request) < size:
            request += conn.recv(size - len(request))
        if os.fork() == 0:
            listener.close()
            _command(conn, json.loads(request), fds)
        for fd in fds:
            os.close(fd)
        conn.close()


def _warm() -> None:
    """Build once what every command builds first and then keeps for the process's life (half
    a ``guard incidents show``'s CPU): the redaction rules (``lru_cache``), and SQLAlchemy's
    per-mapper compile state, memoized on the first query of each table."""
    from sqlalchemy import create_engine
    from sqlalchemy.orm import configure_mappers
    from sqlmodel import Session, SQLModel, select

    import guard.redact
    import guard.store.models

    guard.redact.builtin_rules()
    configure_mappers()
    engine = create_engine("sqlite://")
    try:
        SQLModel.metadata.create_all(engine)
        with Session(engine) as session:
            for mapper in SQLModel._sa_registry.mappers:
                session.exec(select(mapper.class_).limit(1)).all()
    finally:
        engine.dispose()


def _command(conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: become ``python -m guard.cli ARGS`` and never return."""
    import random
    import runpy
    import traceback

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    with contextlib.suppress(OSError):  # "g-run", "g-incidents": CPU by command in `ps`, `sa`
        Path("/proc/self/comm").write_text(f"g-{(request['args'] or ['-'])[0]}"[:15])
    random.seed()  # its own, as a new interpreter's (a fork shares the server's state)
    for target, fd in zip((0, 1, 2), fds, strict=True):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[0] = os.getcwd()  # what ``python -m`` puts first
    sys.argv = ["guard", *request["args"]]
    conn.sendall(_INT.pack(os.getpid()))
    code = [1]

    def report() -> None:  # registered before the command's own handlers: runs after them
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # a closed stream: the status still goes out
                stream.flush()
        conn.sendall(_INT.pack(code[0]))
        _status.append(code[0])

    atexit.register(report)
    try:
        runpy.run_module("guard.cli", run_name="__main__", alter_sys=True)
        code[0] = 0
    except SystemExit as exit_:
        code[0] = _exit_code(exit_.code)
    except BaseException:  # as the interpreter would: printed, status 1
        traceback.print_exc()
        code[0] = 1
    sys.exit(code[0])


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    print(value, file=sys.stderr)
    return 1


if __name__ == "__main__":
    _serve(sys.argv[1])
