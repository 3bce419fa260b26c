"""MTTR with a trusted skill: a watched container is killed -> Guard has verified it healthy.

Side by side in one run: Guard (events stream, the built-in ``docker-start-exited`` skill with
no extra wait, verification polling every 200 ms) against a bare ``docker restart`` issued the
moment the container is killed (the fastest a human or a script with perfect knowledge could
do, with no detection or verification), both as a phase of its own after Guard's and one
right after each of Guard's kills (``alongside``: the same moment of a shared machine). One
container per kill, so the skill's rate limit (3 runs per target per hour) does not apply.
``guard.harness.spans`` says where Guard's time goes, step by step (``spans_ms``); Guard's
clock stops
at its ``resolved`` mark (the resolved state committed), not when the bench's poll sees it.
Run alone: ``python -m bench.mttr [--kills N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import docker
import yaml
from sqlmodel import select

from bench.common import REPO, machine, percentiles, quiet, remember_history, sleepers
from bench.spans import steps
from guard.app import Guard
from guard.config import Settings
from guard.harness import spans
from guard.playbooks.models import Playbook
from guard.store.models import Incident
from tests.helpers.images import ensure_busybox_image


def _skills(folder: Path) -> None:
    dest = folder / "docker-start-exited"
    shutil.copytree(REPO / "skills" / "docker-start-exited", dest)
    spec = yaml.safe_load((dest / "skill.yaml").read_text())
    spec["diagnostics"] = []
    spec["steps"] = [spec["steps"][0], {"verify": {"timeout": "30s", "interval": "200ms"}}]
    (dest / "skill.yaml").write_text(yaml.safe_dump(spec))


async def _guard(client: Any, image: str, kills: int) -> dict[str, Any]:
    value = uuid.uuid4().hex[:10]
    victims = sleepers(client, image, kills, "guard-bench-mttr", value)
    names = [v.name for v in victims]
    times: list[float] = []
    alongside: list[float] = []  # a bare restart right after each of Guard's kills
    killed: dict[str, float] = {}
    with (
        tempfile.TemporaryDirectory(prefix="guard-bench-mttr-") as tmp,
        spans.recording() as marks,
    ):
        root = Path(tmp)
        (root / "skills").mkdir()
        _skills(root / "skills")
        settings = Settings(
            data_dir=root,
            playbooks_dir=root,
            skills_dir=root / "skills",
            http_port=0,
            http_host="127.0.0.1",
            agent={"poll_interval": 0.2},
            triage={"flap_window": 1.0},
        )
        book = Playbook.model_validate(
            {
                "name": "bench",
                "monitors": [
                    {
                        "id": "victims",
                        "type": "docker",
                        "selector": {"label": f"guard.bench={value}"},
                        "every": "1h",
                    }
                ],
            }
        )
        guard = Guard(settings, [book])
        task = asyncio.create_task(guard.run())

        def resolved(name: str) -> bool:
            with guard.db.session() as s:
                return any(
                    i.state == "resolved"
                    for i in s.exec(select(Incident).where(Incident.target == name)).all()
                )

        try:
            await asyncio.sleep(2.0)  # monitors scheduled, stream attached
            await asyncio.to_thread(remember_history, guard)  # a warm Guard, as in service
            for name, victim in zip(names, victims, strict=True):
                t0 = killed[name] = time.monotonic()
                await asyncio.to_thread(victim.kill)
                deadline = t0 + 60
                while time.monotonic() < deadline:  # polling the store
                    if await asyncio.to_thread(resolved, name):
                        break
                    await asyncio.sleep(0.02)
                if time.monotonic() < deadline:  # when the store said so, not when polled
                    at = [m for p, k, m in marks if p == "resolved" and k == name]
                    times.append((at[0] if at else time.monotonic()) - t0)
                alongside.append(await asyncio.to_thread(_bare_one, client, image))
        finally:
            guard.stop()
            await asyncio.wait_for(task, 60)
            for v in victims:
                v.remove(force=True)
    return {
        **percentiles(times),
        "missed": kills - len(times),
        "unit": "s",
        "each_s": [round(t, 3) for t in times],
        "spans_ms": steps(marks, killed),
        "bare_restart_alongside": {**percentiles(alongside), "unit": "s"},
    }


def _bare_one(client: Any, image: str) -> float:
    """Kill a container Guard does not watch and ``docker restart`` it at once: seconds until
    it runs again."""
    c = client.containers.run(
        image,
        ["sleep", "600"],
        name=f"guard-bench-bare-{uuid.uuid4().hex[:10]}",
        detach=True,
        network_mode="none",
    )
    try:
        t0 = time.monotonic()
        c.kill()
        c.restart(timeout=0)
        while c.reload() or c.status != "running":
            time.sleep(0.005)
        return time.monotonic() - t0
    finally:
        c.remove(force=True)


def _bare(client: Any, image: str, kills: int) -> dict[str, Any]:
    return {**percentiles([_bare_one(client, image) for _ in range(kills)]), "unit": "s"}


async def run(kills: int = 10) -> dict[str, Any]:
    quiet()
    client = docker.from_env(timeout=60)
    image = ensure_busybox_image(client)
    try:
        guard = await _guard(client, image, kills)
        bare = await asyncio.to_thread(_bare, client, image, kills)
    finally:
        client.close()
    alongside = guard.pop("bare_restart_alongside")

    def ratio(q: str, anchor: dict[str, Any]) -> float | None:
        return round(guard[q] / anchor[q], 2) if guard.get(q) else None

    return {
        "what": f"container killed -> verified healthy, {kills} kills",
        "guard_trusted_skill": guard,
        "bare_docker_restart": bare,
        "ratio_p50": ratio("p50", bare),
        "ratio_p95": ratio("p95", bare),
        "bare_docker_restart_alongside": alongside,
        "ratio_p50_alongside": ratio("p50", alongside),
        "ratio_p95_alongside": ratio("p95", alongside),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=10)
    args = parser.parse_args()
    print(json.dumps({"machine": machine(), "mttr": asyncio.run(run(args.kills))}, indent=2))


if __name__ == "__main__":
    main()
