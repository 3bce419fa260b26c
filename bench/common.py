"""Shared helpers for the benchmarks: the machine, RSS of a process, percentiles, a Guard home.

Benchmarks print figures; they never assert timings (tests do not time things either).
"""

from __future__ import annotations

import contextlib
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import yaml

REPO = Path(__file__).resolve().parent.parent


def machine() -> dict[str, Any]:
    mem_kb = 0
    with contextlib.suppress(OSError), open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    model = ""
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "memory_gb": round(mem_kb / 1e6, 1),
        "python": platform.python_version(),
        "kernel": platform.release(),
    }


def quiet() -> None:
    """Keep Guard's in-process logs out of the benchmark's output (warnings and worse only)."""
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level="WARNING")


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError(f"no VmRSS for {pid}")


def children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (Guard's memory helper, say)."""
    found: list[int] = []
    with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{pid}/children") as f:
        for child in map(int, f.read().split()):
            found += [child, *children(child)]
    return found


def tree_rss_mb(pid: int) -> float:
    """RSS of ``pid`` and its descendants together (a child that just left counts 0)."""
    total = rss_mb(pid)
    for child in children(pid):
        with contextlib.suppress(OSError, RuntimeError):
            total += rss_mb(child)
    return round(total, 1)


def sleepers(
    client: Any, image: str, n: int, prefix: str, value: str, parallel: int = 1
) -> list[Any]:
    """``n`` containers sleeping 10 min, named ``{prefix}-{value}-{i}``, labelled
    ``guard.bench={value}`` (what a bench's Docker monitor selects), with no network;
    ``parallel`` of them started at once."""
    from concurrent.futures import ThreadPoolExecutor

    def one(i: int) -> Any:
        return client.containers.run(
            image,
            ["sleep", "600"],
            name=f"{prefix}-{value}-{i}",
            detach=True,
            labels={"guard.bench": value},
            network_mode="none",
        )

    with ThreadPoolExecutor(parallel) as pool:
        return list(pool.map(one, range(n)))


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    q = statistics.quantiles(ordered, n=100, method="inclusive") if len(ordered) > 1 else ordered
    return {
        "p50": round(statistics.median(ordered), 4),
        "p95": round(q[94] if len(q) > 1 else ordered[0], 4),
        "max": round(ordered[-1], 4),
        "n": len(ordered),
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class GuardProcess:
    """``guard run`` in a subprocess with its own home (config, playbooks, data)."""

    def __init__(
        self, root: Path, monitors: list[dict[str, Any]], config: dict[str, Any] | None = None
    ) -> None:
        self.root = root
        (root / "playbooks").mkdir(parents=True, exist_ok=True)
        (root / "playbooks" / "bench.yaml").write_text(
            yaml.safe_dump({"name": "bench", "monitors": monitors})
        )
        self.config = root / "guard.yaml"
        self.config.write_text(
            yaml.safe_dump(
                {
                    "data_dir": str(root / "data"),
                    "playbooks_dir": str(root / "playbooks"),
                    "skills_dir": str(root / "skills"),
                    "log_level": "WARNING",
                    **(config or {}),
                }
            )
        )
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, extra_env: dict[str, str] | None = None) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
        env.update(
            GUARD_CONFIG=str(self.config),
            GUARD_HTTP_PORT=str(self.port),
            GUARD_HTTP_HOST="127.0.0.1",
            PYTHONPATH=str(REPO),
            **(extra_env or {}),
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "guard.cli", "run"],
            cwd=self.root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(self.root / "guard.log", "wb"),  # noqa: SIM115 (lives with the process)
        )
        end = time.monotonic() + 60
        while time.monotonic() < end:
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(self.url("/readyz"), timeout=2).status_code == 200:
                    return
            time.sleep(0.2)
        raise RuntimeError(f"guard run did not become ready; see {self.root / 'guard.log'}")

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def metric(self, name: str) -> float:
        for line in httpx.get(self.url("/metrics"), timeout=10).text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
        return 0.0

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


@contextlib.contextmanager
def guard_process(
    monitors: list[dict[str, Any]], prefix: str, config: dict[str, Any] | None = None
) -> Iterator[GuardProcess]:
    with tempfile.TemporaryDirectory(prefix=f"guard-bench-{prefix}-") as tmp:
        g = GuardProcess(Path(tmp), monitors, config)
        try:
            g.start()
            yield g
        finally:
            g.stop()


def replace_section(path: Path, marker: str, body: str) -> None:
    """Put ``body`` between the two ``marker`` lines of ``path`` (replacing what was there), or
    append it with its markers when the file has none."""
    text = path.read_text() if path.exists() else ""
    body = f"{marker}\n{body}{marker}\n"
    if marker in text:
        start = text.index(marker)
        end = text.index(marker, start + 1) + len(marker) + 1
        text = text[:start] + body + text[end:]
    else:
        text = text + ("\n" if text else "") + body
    path.write_text(text)


def remember_history(guard: Any) -> None:
    """Give ``guard`` a history: one past incident in semantic memory, which starts the
    memory helper now (LanceDB's import: 1.5-3 s of CPU), as a Guard in service has it, so
    the measured kills do not pay for it (a recall with nothing remembered starts none)."""
    from types import SimpleNamespace

    past = SimpleNamespace(
        id=0,
        title="container_exited on an-earlier-service",
        message="an earlier service exited",
        source="docker",
        kind="container_exited",
        target="an-earlier-service",
    )
    guard.agent.memory.remember(past, resolution="restarted it")
