"""Detection latency: a watched container is killed -> its incident is opened (20 kills).

Side by side in one run: a bare Docker SDK events subscriber (kill -> its ``die`` event, the
floor any events-driven watcher stands on), Guard's events stream (the default), the same
during a log storm (a container in the selection printing 5,000 ``ERROR`` lines a second that
the monitor's log rule counts), and polling alone (``events: false``, ``every: 2s``). Guard
runs a real ``Guard.run()`` on the local engine with the offline busybox image; the clock stops
in an incident event hook, i.e. once the incident is committed. ``guard.harness.spans`` says where
Guard's time goes (die received, queued, triage batch taken, stored).
Run alone: ``python -m bench.detection [--kills N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import operator
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import docker

from bench.common import machine, percentiles, quiet, sleepers
from bench.spans import steps
from guard.app import Guard
from guard.config import Settings
from guard.domain.records import IncidentEvent
from guard.harness import spans
from guard.playbooks.models import Playbook
from tests.helpers.images import ensure_busybox_image

STORM = 5000  # lines a second while the storm runs
NOISE = (
    "while true; do i=0; while [ $i -lt 500 ]; do "
    'echo "ERROR req $i: upstream timed out after 30s"; i=$((i+1)); done; sleep 0.1; done'
)


# A bare subscriber in a process of its own: it sees each kill's ``die`` beside Guard
FLOOR = """
import sys, time, docker
events = docker.from_env().events(
    decode=True, filters={"type": "container", "event": "die", "label": sys.argv[1]}
)
print("ready", flush=True)
for e in events:
    print(e["Actor"]["Attributes"]["name"], time.monotonic(), flush=True)
"""


@contextlib.contextmanager
def floor(label: str) -> Iterator[dict[str, float]]:
    """While the block runs, a bare SDK subscriber notes when it got each ``die`` (the
    monotonic clock is the machine's, so its times compare with this process's)."""
    proc = subprocess.Popen([sys.executable, "-c", FLOOR, label], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    proc.stdout.readline()  # subscribed
    seen: dict[str, float] = {}
    try:
        yield seen
    finally:
        time.sleep(0.5)  # the last die reaches it
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
        for line in out.splitlines():
            name, at = line.split()
            seen.setdefault(name, float(at))


def with_p99(values: list[float]) -> dict[str, Any]:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))] if ordered else None
    return {**percentiles(values), "p99": p99} if values else {"n": 0}


def _bare(client: Any, image: str, kills: int) -> dict[str, Any]:
    """Kill -> ``die`` seen by a plain SDK subscriber in its own thread (nothing else runs)."""
    value = uuid.uuid4().hex[:10]
    victims = sleepers(client, image, kills, "guard-bench", value)
    seen: dict[str, float] = {}
    got = threading.Condition()
    stream = client.events(
        decode=True, filters={"type": "container", "event": "die", "label": f"guard.bench={value}"}
    )

    def follow() -> None:
        with contextlib.suppress(Exception):  # the stream is closed at the end
            for event in stream:
                name = (event.get("Actor") or {}).get("Attributes", {}).get("name", "")
                with got:
                    seen.setdefault(name, time.monotonic())
                    got.notify_all()

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    latencies = []
    try:
        time.sleep(0.5)  # subscribed
        for victim in victims:
            t0 = time.monotonic()
            victim.kill()
            with got:
                got.wait_for(partial(operator.contains, seen, victim.name), 30)
            if victim.name in seen:
                latencies.append(seen[victim.name] - t0)
    finally:
        stream.close()
        for v in victims:
            v.remove(force=True)
    return {**with_p99(latencies), "missed": kills - len(latencies), "unit": "s"}


async def _measure(
    client: Any, image: str, kills: int, *, events: bool, every: str, storm: bool = False
) -> dict[str, Any]:
    value = uuid.uuid4().hex[:10]
    victims = sleepers(client, image, kills, "guard-bench", value)
    names = [v.name for v in victims]
    noisy = (
        client.containers.run(
            image,
            ["sh", "-c", NOISE],
            name=f"guard-bench-noise-{value}",
            detach=True,
            labels={"guard.bench.noise": value},
            network_mode="none",
        )
        if storm
        else None
    )
    opened: dict[str, float] = {}
    killed: dict[str, float] = {}
    noise = {  # its own monitor: the storm breaker caps new incidents per monitor
        "id": "noise",
        "type": "docker",
        "selector": {"label": f"guard.bench.noise={value}"},
        "every": "1h",
        "rules": [{"kind": "app_error", "pattern": r"\bERROR\b"}],
    }
    with (
        tempfile.TemporaryDirectory(prefix="guard-bench-detect-") as tmp,
        spans.recording() as marks,
        floor(f"guard.bench={value}") as dies,
    ):
        # the agent off: its remedies (restarting the earlier victims) would load the engine
        # while the next kills are timed, and every ``die`` would come later for it
        settings = Settings(
            data_dir=Path(tmp),
            playbooks_dir=Path(tmp),
            http_port=0,
            http_host="127.0.0.1",
            agent={"enabled": False},
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
                    },
                    *([noise] if storm else []),
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
            await asyncio.sleep(1.0)  # the events stream is attached (and the storm counted)
            latencies = []
            for name, victim in zip(names, victims, strict=True):
                t0 = killed[name] = time.monotonic()
                await asyncio.to_thread(victim.kill)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(seen[name].wait(), 30)
                if name in opened:
                    latencies.append(opened[name] - t0)
        finally:
            guard.stop()
            await asyncio.wait_for(task, 30)
            for v in [*victims, *([noisy] if noisy else [])]:
                v.remove(force=True)
    result = with_p99(latencies)
    found = {**result, "missed": kills - len(latencies), "unit": "s"}
    same = [dies[n] - killed[n] for n in names if n in dies and n in opened]
    if same:  # the bare subscriber's kill -> die for the very kills Guard was timed on
        found["bare_subscriber_same_kills"] = with_p99(same)
        found["ratio_p50_same_kills"] = round(result["p50"] / percentiles(same)["p50"], 2)
        found["guard_minus_bare_ms"] = with_p99(
            [round((opened[n] - dies[n]) * 1000, 1) for n in names if n in dies and n in opened]
        )
    if events:
        found["spans_ms"] = steps(marks, killed)
    return found


async def run(kills: int = 20) -> dict[str, Any]:
    quiet()
    client = docker.from_env(timeout=60)
    image = ensure_busybox_image(client)
    try:
        bare = await asyncio.to_thread(_bare, client, image, kills)
        stream = await _measure(client, image, kills, events=True, every="1h")
        storm = await _measure(client, image, kills, events=True, every="1h", storm=True)
        poll = await _measure(client, image, kills, events=False, every="2s")
    finally:
        client.close()
    return {
        "what": f"container killed -> incident opened, {kills} kills, real Guard.run()",
        "bare_sdk_subscriber_die": bare,
        "events_stream": stream,
        "ratio_p50": round(stream["p50"] / bare["p50"], 2) if stream.get("p50") else None,
        f"events_stream_during_{STORM}_lines_a_second": storm,
        "polling_every_2s": poll,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    args = parser.parse_args()
    print(json.dumps({"machine": machine(), "detection": asyncio.run(run(args.kills))}, indent=2))


if __name__ == "__main__":
    main()
