"""Sandbox latency benchmark: cold start, warm exec, and a bare ``docker exec`` reference.

Usage: ``python bench/sandbox.py [--runs 50] [--image NAME]``; ``--backends``: every sandbox
backend side by side (``bench.sandbox_backends``). Prints one JSON object:
p50/p95 (ms) of a cold start (container create + start; and until a first command returns),
of a warm ``DockerSandbox.run(["true"])``, and of a bare exec of ``true`` through the same
docker SDK low-level API (exec_create + exec_start + exec_inspect) and through the ``docker``
CLI, all in the same run; warm and bare runs are interleaved so drift hits both alike. The
target is ``warm_vs_bare_sdk_p50 <= 1.3``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import time
from typing import Any

from loguru import logger

from guard.config import SandboxSettings
from guard.sandbox import images
from guard.sandbox.docker import DockerSandbox, connect

DEFAULT_IMAGE = "guard-test-busybox:sandbox"


def _stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]  # noqa: E731
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 1),
        "p95_ms": round(pick(0.95) * 1000, 1),
        "min_ms": round(ordered[0] * 1000, 1),
    }


def _bare_exec(api: Any, cid: str) -> float:
    t0 = time.perf_counter()
    exec_id = api.exec_create(cid, ["true"])["Id"]
    api.exec_start(exec_id)
    code = api.exec_inspect(exec_id)["ExitCode"]
    elapsed = time.perf_counter() - t0
    assert code == 0
    return elapsed


def _cli_exec(cli: str, cid: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([cli, "exec", cid, "true"], check=True)
    return time.perf_counter() - t0


async def bench(runs: int, image: str) -> dict[str, Any]:
    client = connect()
    if image == DEFAULT_IMAGE and not images.image_exists(client, image):
        images.build_busybox(client, image)
    settings = SandboxSettings(image=image)

    cold, cold_first = [], []
    for i in range(runs):
        box = DockerSandbox(settings, incident_id=f"bench-cold-{i}", client=client)
        t0 = time.perf_counter()
        await box.start()
        cold.append(time.perf_counter() - t0)
        await box.run(["true"])
        cold_first.append(time.perf_counter() - t0)
        await box.close()

    box = DockerSandbox(settings, incident_id="bench-warm", client=client)
    await box.start()
    cid = box.container_id
    assert cid is not None
    cli = shutil.which("docker")
    warm, bare, bare_cli = [], [], []
    try:
        for _ in range(3):  # warm-up: connection pool, page cache
            await box.run(["true"])
            _bare_exec(client.api, cid)
        for _ in range(runs):
            t0 = time.perf_counter()
            result = await box.run(["true"])
            warm.append(time.perf_counter() - t0)
            assert result.exit_code == 0
            bare.append(_bare_exec(client.api, cid))  # blocking on purpose: the bare reference
            if cli:
                bare_cli.append(_cli_exec(cli, cid))
    finally:
        await box.close()

    out: dict[str, Any] = {
        "runs": runs,
        "image": image,
        "cold_start": _stats(cold),
        "cold_start_to_first_command": _stats(cold_first),
        "warm_exec": _stats(warm),
        "bare_docker_exec_sdk": _stats(bare),
    }
    if bare_cli:
        out["bare_docker_exec_cli"] = _stats(bare_cli)
    warm_p50 = statistics.median(warm)
    out["warm_vs_bare_sdk_p50"] = round(warm_p50 / statistics.median(bare), 3)
    if bare_cli:
        out["warm_vs_bare_cli_p50"] = round(warm_p50 / statistics.median(bare_cli), 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--image", default=DEFAULT_IMAGE)
    parser.add_argument(
        "--backends",
        action="store_true",
        help="every sandbox backend side by side instead (bench.sandbox_backends)",
    )
    args = parser.parse_args()
    if args.backends:
        from bench import sandbox_backends

        sys.argv = [sys.argv[0], "--runs", str(min(args.runs, 10))]
        sandbox_backends.main()
        return
    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    print(json.dumps(asyncio.run(bench(args.runs, args.image)), indent=2))


if __name__ == "__main__":
    main()
