"""Every sandbox backend, one trivial step each: ``python -m bench.sandbox_backends [--runs 10]``.

Per backend (``local``; ``docker`` on the local engine; ``docker-tls``, the same engine reached
as a remote one over TLS with client certificates, tests/fakes/docker_tls.py; ``docker-ssh``,
over SSH, tests/helpers/ssh_engine.py; ``kubernetes``
against the tests' API server, whose kubelet runs each step pod as a container on the local
engine): the time from a step's start to its result for ``echo hi`` in a new sandbox (the first
step of an incident: what a human waits for), and for ``true`` in a warm one (later steps; a
kubernetes step is always a new pod). ``ExecResult`` arrives whole, so "to its result" is the
first byte Guard can show. Prints one JSON object: p50/p95/min in ms per backend.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from loguru import logger

from guard.config import SandboxSettings
from guard.sandbox import WarmSandboxPool
from guard.sandbox.docker import connect
from tests.fakes.docker_tls import tls_engine, tls_environ
from tests.helpers.images import ensure_busybox_image
from tests.helpers.kube_sandbox import NAMESPACE, fake_cluster
from tests.helpers.sandbox import BUSYBOX_IMAGE
from tests.helpers.ssh_engine import ssh_engine, ssh_environ

BACKENDS = ("local", "docker", "docker-tls", "docker-ssh", "kubernetes")


def _stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 1),
        "p95_ms": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))] * 1000, 1),
        "min_ms": round(ordered[0] * 1000, 1),
    }


@contextlib.contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    import os

    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.asynccontextmanager
async def _pool(name: str, folder: Path) -> AsyncIterator[WarmSandboxPool]:
    """A pool of backend ``name``, and what it needs running around it."""
    if name == "local":
        yield WarmSandboxPool(SandboxSettings(backend="local", timeout=60))
        return
    engine = connect(timeout=300)
    ensure_busybox_image(engine, BUSYBOX_IMAGE)
    if name == "docker":
        yield WarmSandboxPool(SandboxSettings(image=BUSYBOX_IMAGE, timeout=60), client=engine)
    elif name == "docker-tls":
        with tls_engine(folder / "tls") as remote, _environ(tls_environ(remote)):
            client = connect(timeout=300)
            yield WarmSandboxPool(SandboxSettings(image=BUSYBOX_IMAGE, timeout=60), client=client)
            client.close()
    elif name == "docker-ssh":
        with (
            ssh_engine(engine, folder / "home", "guard-bench-ssh") as remote,
            _environ(ssh_environ(remote)),
        ):
            client = connect(timeout=300)
            yield WarmSandboxPool(SandboxSettings(image=BUSYBOX_IMAGE, timeout=60), client=client)
            client.close()
    else:
        with fake_cluster(engine, folder) as cluster:
            settings = SandboxSettings(
                backend="kubernetes", namespace=NAMESPACE, image=BUSYBOX_IMAGE, timeout=60
            )
            yield WarmSandboxPool(settings, cluster=cluster.settings)
    engine.close()


async def measure(name: str, runs: int) -> dict[str, Any]:
    first, warm = [], []
    with tempfile.TemporaryDirectory() as folder:
        async with _pool(name, Path(folder)) as pool:
            try:
                for i in range(runs):
                    t0 = time.perf_counter()
                    box = await pool.get(f"bench-{name}-{i}")
                    result = await box.run(["echo", "hi"])
                    first.append(time.perf_counter() - t0)
                    assert result.exit_code == 0 and "hi" in result.stdout, result
                    for _ in range(3):
                        t0 = time.perf_counter()
                        done = await box.run(["true"])
                        warm.append(time.perf_counter() - t0)
                        assert done.exit_code == 0, done
                    await pool.release(f"bench-{name}-{i}")
            finally:
                await pool.close()
    return {"first_step_new_sandbox": _stats(first), "next_step": _stats(warm)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--only", choices=BACKENDS, action="append")
    args = parser.parse_args()
    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    out = {"runs": args.runs}
    for name in args.only or BACKENDS:
        out[name] = asyncio.run(measure(name, args.runs))
        print(f"{name}: {json.dumps(out[name])}", file=sys.stderr)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
