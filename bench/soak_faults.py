"""The faults the soak injects, each one a small object that cleans up after itself.

- ``PrivateDocker``: a dockerd of the soak's own (own socket, data root, exec root, pid file,
  network namespace; no bridge, no iptables), so restarting it never touches the machine's
  engine; ``--live-restore``
  keeps the victim container running across a restart, so what is tested is Guard's monitor
  reconnecting, not the container dying.
- ``SmallVolume``: a tmpfs mounted as Guard's data dir, filled to nearly full by a ballast file.
- ``lock_sqlite``: a separate process holding ``BEGIN EXCLUSIVE`` on Guard's database.
- ``FakeClock``: libfaketime's offset file; Guard runs with it preloaded, so the wall clock
  jumps when the file changes and ``CLOCK_MONOTONIC`` does not.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

FAKETIME_LIBS = (
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
    "/usr/lib/faketime/libfaketimeMT.so.1",
)


class FaultError(RuntimeError):
    """A fault could not be set up (a tool missing, a mount refused); the message says which."""


class PrivateDocker:
    """A dockerd on ``root/docker.sock`` with everything it owns under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.sock = root / "docker.sock"
        self.proc: subprocess.Popen[bytes] | None = None
        self.restarts = 0

    @property
    def host(self) -> str:
        return f"unix://{self.sock}"

    def start(self) -> None:
        if shutil.which("dockerd") is None:
            raise FaultError("dockerd not found: `apt-get install docker.io`")
        self.root.mkdir(parents=True, exist_ok=True)
        # its own network namespace: a dockerd without a bridge, in the host's, deletes the
        # host engine's docker0 as it starts (and every container on it loses its network)
        self.proc = subprocess.Popen(
            [
                *(["unshare", "--net", "--"] if shutil.which("unshare") else []),
                "dockerd",
                f"--host={self.host}",
                f"--data-root={self.root / 'data'}",
                f"--exec-root={self.root / 'exec'}",
                f"--pidfile={self.root / 'dockerd.pid'}",
                "--bridge=none",
                "--iptables=false",
                "--ip6tables=false",
                "--live-restore",
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(self.root / "dockerd.log", "ab"),  # noqa: SIM115 (lives with the process)
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise FaultError(f"private dockerd exited; see {self.root / 'dockerd.log'}")
            if self.docker("version", check=False).returncode == 0:
                return
            time.sleep(0.5)
        raise FaultError(f"private dockerd did not answer; see {self.root / 'dockerd.log'}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()
        self.restarts += 1

    def docker(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["docker", "--host", self.host, *args],
            capture_output=True,
            text=True,
            check=check,
            timeout=60,
        )

    def client(self) -> Any:
        import docker

        return docker.DockerClient(base_url=self.host, timeout=60)

    def close(self) -> None:
        """Remove the containers, stop the daemon and whatever it left running, unmount."""
        if self.proc is not None and self.proc.poll() is None:
            self.docker("rm", "-f", "soak-victim", check=False)
        self.stop()
        # with --live-restore a container's shim may outlive dockerd: end those under our root
        for pid in _pids_mentioning(str(self.root)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        unmount_under(self.root)


def _pids_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            with contextlib.suppress(OSError):
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


def unmount_under(root: Path) -> None:
    """Unmount every mount at or below ``root``, deepest first."""
    prefix = str(root.resolve())
    with open("/proc/self/mounts") as f:
        points = [line.split()[1] for line in f]
    for point in sorted(points, key=len, reverse=True):
        if point == prefix or point.startswith(prefix + "/"):
            subprocess.run(["umount", "-l", point], capture_output=True, check=False)


class SmallVolume:
    """A tmpfs of ``size_mb`` at ``path``; ``fill`` leaves ``leave_kb`` free, ``free`` undoes it."""

    def __init__(self, path: Path, size_mb: int) -> None:
        self.path = path
        self.ballast = path / "ballast.bin"
        path.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(path)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise FaultError(f"mount tmpfs at {path} failed: {done.stderr.strip()}")

    def free_kb(self) -> int:
        st = os.statvfs(self.path)
        return st.f_bavail * st.f_frsize // 1024

    def fill(self, leave_kb: int = 64) -> None:
        size = max(0, self.free_kb() - leave_kb) * 1024
        with open(self.ballast, "wb") as f:
            os.posix_fallocate(f.fileno(), 0, size)

    def free(self) -> None:
        self.ballast.unlink(missing_ok=True)

    def close(self) -> None:
        subprocess.run(["umount", "-l", str(self.path)], capture_output=True, check=False)


_LOCKER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], timeout=60, isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("COMMIT")
"""


def lock_sqlite(db: Path, seconds: float) -> subprocess.Popen[str]:
    """A separate process that holds ``BEGIN EXCLUSIVE`` on ``db`` for ``seconds``; returns once
    the lock is held."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _LOCKER, str(db), str(seconds)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "locked":
        proc.kill()
        raise FaultError(f"could not lock {db}: {proc.communicate()[1].strip()}")
    return proc


class FakeClock:
    """The offset file libfaketime reads (at most once a second) for the wall clock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset_s = 0
        path.write_text("+0\n")
        self.lib = next((lib for lib in FAKETIME_LIBS if Path(lib).is_file()), None)
        if self.lib is None:
            raise FaultError("libfaketime not found: `apt-get install faketime`")

    def env(self) -> dict[str, str]:
        assert self.lib is not None
        return {
            "LD_PRELOAD": self.lib,
            "FAKETIME_TIMESTAMP_FILE": str(self.path),
            # read at most once a second: re-reading it on every call (FAKETIME_NO_CACHE) made
            # each wall-clock read and thread hand-off of Guard a file read, and stalled its
            # event loop for seconds at a time under load (a cost of the fault, not of Guard)
            "FAKETIME_CACHE_DURATION": "1",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        }

    def jump(self, seconds: int) -> None:
        self.offset_s += seconds
        self.path.write_text(f"+{self.offset_s}\n")

    def probe(self) -> dict[str, float]:
        """A process under the same preload: its wall clock against ours, and its monotonic
        clock against ours (a real jump moves the first and leaves the second)."""
        code = "import json, time; print(json.dumps([time.time(), time.monotonic()]))"
        before = time.monotonic()
        out = subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, **self.env()},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        wall, mono = json.loads(out)
        return {
            "wall_offset_s": round(wall - time.time(), 1),
            "monotonic_offset_s": round(mono - (before + time.monotonic()) / 2, 1),
        }
