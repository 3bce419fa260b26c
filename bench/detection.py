"""Detection latency: a watched container is killed -> its incident is opened (20 kills).

Side by side in one run: the Docker events stream (the default) and polling alone (``events:
false``, ``every: 2s``). Both go through a real ``Guard.run()`` on the local engine with the
offline busybox image; the clock stops in an incident event hook, i.e. once the incident is
committed. Run alone: ``python -m bench.detection [--kills N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import docker

from bench.common import machine, percentiles, quiet
from guard.app import Guard
from guard.config import Settings
from guard.playbooks.models import Playbook
from guard.records import IncidentEvent
from tests.images import ensure_busybox_image


async def _measure(
    client: Any, image: str, kills: int, *, events: bool, every: str
) -> dict[str, Any]:
    value = uuid.uuid4().hex[:10]
    labels = {"guard.bench": value}
    names = [f"guard-bench-{value}-{i}" for i in range(kills)]
    victims = [
        client.containers.run(
            image, ["sleep", "600"], name=n, detach=True, labels=labels, network_mode="none"
        )
        for n in names
    ]
    opened: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="guard-bench-detect-") as tmp:
        settings = Settings(
            data_dir=Path(tmp), playbooks_dir=Path(tmp), http_port=0, http_host="127.0.0.1"
        )
        book = Playbook.model_validate(
            {
                "name": "bench",
                "monitors": [
                    {
                        "id": "victims",
                        "type": "docker",
                        "selector": {"label": f"guard.bench={value}"},
                        "every": every,
                        "events": events,
                    }
                ],
            }
        )
        guard = Guard(settings, [book])

        loop = asyncio.get_running_loop()
        first_batch = asyncio.Event()
        seen = {name: asyncio.Event() for name in names}

        def hook(evs: list[IncidentEvent]) -> None:  # runs in the triage worker thread
            loop.call_soon_threadsafe(first_batch.set)
            for ev in evs:
                name = ev.title.rsplit(" on ", 1)[-1]
                if ev.type == "opened" and name in seen:
                    opened.setdefault(name, time.monotonic())
                    loop.call_soon_threadsafe(seen[name].set)

        guard.event_hooks.append(hook)
        task = asyncio.create_task(guard.run())
        try:
            await asyncio.wait_for(first_batch.wait(), 60)
            await asyncio.sleep(1.0)  # the events stream is attached
            latencies = []
            for name, victim in zip(names, victims, strict=True):
                t0 = time.monotonic()
                await asyncio.to_thread(victim.kill)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(seen[name].wait(), 30)
                if name in opened:
                    latencies.append(opened[name] - t0)
        finally:
            guard.stop()
            await asyncio.wait_for(task, 30)
            for v in victims:
                v.remove(force=True)
    result = percentiles(latencies) if latencies else {"n": 0}
    return {**result, "missed": kills - len(latencies), "unit": "s"}


async def run(kills: int = 20) -> dict[str, Any]:
    quiet()
    client = docker.from_env(timeout=60)
    image = ensure_busybox_image(client)
    try:
        stream = await _measure(client, image, kills, events=True, every="1h")
        poll = await _measure(client, image, kills, events=False, every="2s")
    finally:
        client.close()
    return {
        "what": f"container killed -> incident opened, {kills} kills, real Guard.run()",
        "events_stream": stream,
        "polling_every_2s": poll,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    args = parser.parse_args()
    print(json.dumps({"machine": machine(), "detection": asyncio.run(run(args.kills))}, indent=2))


if __name__ == "__main__":
    main()
