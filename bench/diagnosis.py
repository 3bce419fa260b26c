"""Model-driven diagnosis on real Docker faults: how many proposals verified, tokens, time.

Six faults, each a real container on the local engine that a Docker monitor watches: a crash
from a bad environment variable, a missing config file, a port clash, an OOM kill (once), a
dependency that is down, and a full tmpfs (filled once). No skill matches any of them, so
Guard's model investigates (read-only tools, the Docker sandbox) and proposes a fix; the bench
approves each proposal as a human would (``guard approve``), and Guard runs and verifies it.
It reports, per fault and overall: whether a proposal came, whether it verified (Guard's
verdict) and whether the container still runs 3 s later (the bench's own look), tokens, model
calls and wall time.

The endpoint comes from the environment: ``GUARD_BENCH_LLM_PROVIDER`` (openai|anthropic),
``GUARD_BENCH_LLM_BASE_URL``, ``GUARD_BENCH_LLM_MODEL``, ``GUARD_BENCH_LLM_API_KEY``. Without
them it runs against the scripted server of the tests (a "model" that reads the logs, runs one
command and always proposes a restart), which proves the harness, not a model:
``python -m bench.diagnosis``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
from sqlmodel import col, select

from bench.common import machine, quiet
from guard.app import Guard
from guard.config import Settings
from guard.incidents.commands import queue_command
from guard.incidents.gate import Actor, default_gate
from guard.playbooks.models import Playbook
from guard.store.models import CommandStatus, HumanCommand, Incident, Trajectory
from guard.util.commandtext import digest
from tests.fakes.model import ModelServer, Reply, call
from tests.helpers.images import ensure_busybox_image


@dataclass(frozen=True)
class Fault:
    name: str
    command: str
    options: dict[str, Any]
    needs: str | None = None  # "blocker": a container whose network namespace it shares;
    # "dependency": a stopped service it calls on a network


FAULTS = [
    Fault(
        "bad_env",
        'echo "config error: MODE=$MODE is not one of dev, prod" >&2; exit 78',
        {"environment": {"MODE": "bogus"}},
    ),
    Fault(
        "missing_file",
        "cat /etc/app/config.yaml >/dev/null || { echo 'open "
        "/etc/app/config.yaml: no such file or directory' >&2; exit 66; }; sleep 600",
        {},
    ),
    Fault(
        "port_clash",
        "httpd -f -p 8080 2>&1; echo 'listen tcp :8080: address already in use' >&2; exit 98",
        {},
        needs="blocker",
    ),
    Fault(
        "oom_once",
        "if [ ! -f /tmp/oom-done ]; then touch /tmp/oom-done; echo 'loading "
        "cache' ; tail /dev/zero; fi; sleep 600",
        {"mem_limit": "16m", "memswap_limit": "16m"},
    ),
    Fault(
        "dependency_down",
        "wget -q -T 2 -O /dev/null http://dep:8080/ || { echo "
        "'dial tcp dep:8080: connect: connection refused' >&2; exit 69; }; sleep 600",
        {},
        needs="dependency",
    ),
    Fault(
        "tmpfs_full",
        "if [ ! -f /tmp/filled ]; then touch /tmp/filled; dd if=/dev/zero "
        "of=/data/blob bs=1k count=4096 2>/dev/null; fi; echo state > /data/state || { "
        "echo 'write /data/state: no space left on device' >&2; exit 28; }; sleep 600",
        {"tmpfs": {"/data": "size=1m"}, "user": "0:0"},
    ),  # root: a restarted tmpfs is root's
]


def scripted(name_of: Callable[[int], str]) -> Callable[[int], Reply]:
    """The harness's stand-in model: logs, one command, then always a restart."""

    def reply(n: int) -> Reply:
        turn = n % 3
        if turn == 0:
            return call("recent_logs", lines=20)
        if turn == 1:
            return call("sandbox_run", command="id -u; df -k /tmp | tail -1")
        return call(
            "propose_remedy",
            fix=f"docker.restart {name_of(n)}",
            reason="the container stopped; a restart may clear a transient fault",
            confidence=0.5,
        )

    return reply


def endpoint() -> dict[str, Any] | None:
    env = os.environ
    if not env.get("GUARD_BENCH_LLM_PROVIDER"):
        return None
    return {
        "provider": env["GUARD_BENCH_LLM_PROVIDER"],
        "base_url": env.get("GUARD_BENCH_LLM_BASE_URL") or None,
        "model": env.get("GUARD_BENCH_LLM_MODEL"),
        "api_key": env.get("GUARD_BENCH_LLM_API_KEY") or None,
    }


class Bench:
    def __init__(self, client: Any, image: str, label: str) -> None:
        self.client = client
        self.image = image
        self.label = label
        self.made: list[Any] = []
        self.network = client.networks.create(f"guard-bench-diag-{label}")

    def start(self, fault: Fault) -> str:
        name = f"guard-bench-diag-{fault.name}-{self.label}"
        options: dict[str, Any] = dict(fault.options)
        if fault.needs == "blocker":
            blocker = self.client.containers.run(
                self.image,
                ["httpd", "-f", "-p", "8080"],
                detach=True,
                name=f"{name}-blocker",
                network=self.network.name,
            )
            self.made.append(blocker)
            options["network_mode"] = f"container:{blocker.id}"
        elif fault.needs == "dependency":
            dep = self.client.containers.create(
                self.image, ["httpd", "-f", "-p", "8080"], name=f"{name}-dep"
            )
            self.made.append(dep)  # created, never started: the dependency is down
            options["network"] = self.network.name
            self.network.connect(dep, aliases=["dep"])
        else:
            options.setdefault("network_mode", "none")
        victim = self.client.containers.run(
            self.image,
            ["sh", "-c", fault.command],
            detach=True,
            name=name,
            labels={"guard.bench.diag": self.label},
            **options,
        )
        self.made.append(victim)
        return name

    def running_later(self, name: str) -> bool:
        time.sleep(3)
        c = self.client.containers.get(name)
        return bool(c.status == "running")

    def close(self) -> None:
        for c in reversed(self.made):
            with contextlib.suppress(Exception):
                c.remove(force=True)
        self.network.remove()


async def _wait(predicate: Callable[[], Any], within: float) -> Any:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if value := await asyncio.to_thread(predicate):
            return value
        await asyncio.sleep(0.2)
    return None


async def run(llm: dict[str, Any] | None = None) -> dict[str, Any]:
    quiet()
    client = docker.from_env(timeout=120)
    image = ensure_busybox_image(client)
    label = uuid.uuid4().hex[:8]
    bench = Bench(client, image, label)
    names: list[str] = []
    server: ModelServer | None = None
    if llm is None:
        server = ModelServer("openai", default=scripted(lambda n: names[-1]))
        llm = server.config()
    results: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="guard-bench-diag-") as tmp:
            root = Path(tmp)
            (root / "skills").mkdir()
            settings = Settings(
                data_dir=root,
                playbooks_dir=root,
                skills_dir=root / "skills",
                http_port=0,
                http_host="127.0.0.1",
                llm=llm,
                sandbox={"image": image, "timeout": "20s"},
                agent={"poll_interval": 0.2, "verify_timeout": "10s"},
                skills={"git_author": "Guard Bench <bench@guard>"},
            )
            book = Playbook.model_validate(
                {
                    "name": "bench",
                    "monitors": [
                        {
                            "id": "faults",
                            "type": "docker",
                            "selector": {"label": f"guard.bench.diag={label}"},
                            "every": "1h",
                        }
                    ],
                }
            )
            guard = Guard(settings, [book])
            task = asyncio.create_task(guard.run())
            try:
                await asyncio.sleep(2.0)
                for fault in FAULTS:
                    t0 = time.monotonic()
                    name = await asyncio.to_thread(bench.start, fault)
                    names.append(name)
                    results.append(await _one(guard, bench, fault, name, t0))
            finally:
                guard.stop()
                await asyncio.wait_for(task, 120)
    finally:
        bench.close()
        client.close()
        if server is not None:
            server.close()
    proposed = [r for r in results if r["proposal"]]
    return {
        "what": f"{len(FAULTS)} Docker faults, model {llm.get('provider')}:{llm.get('model')}"
        + (
            " (the scripted test server: proves the harness, not a model)"
            if server is not None
            else ""
        ),
        "faults": results,
        "proposals": len(proposed),
        "verified_share": round(sum(r["verified"] for r in proposed) / len(proposed), 3)
        if proposed
        else 0.0,
        "still_running_share": round(
            sum(r["running_3s_later"] for r in proposed) / len(proposed), 3
        )
        if proposed
        else 0.0,
        "tokens_total": sum(r["tokens"] for r in results),
        "model_calls_total": sum(r["model_calls"] for r in results),
        "investigation_seconds_total": round(sum(r["investigation_s"] for r in results), 2),
    }


async def _one(guard: Guard, bench: Bench, fault: Fault, name: str, t0: float) -> dict[str, Any]:
    db = guard.db

    def asked() -> Incident | None:
        with db.session() as s:
            return s.exec(
                select(Incident).where(
                    Incident.target == name,
                    col(Incident.state).in_(["awaiting_human", "escalated"]),
                )
            ).first()

    inc = await _wait(asked, 180)
    out: dict[str, Any] = {
        "fault": fault.name,
        "incident": bool(inc),
        "proposal": None,
        "verified": False,
        "running_3s_later": False,
        "tokens": 0,
        "model_calls": 0,
        "investigation_s": 0.0,
        "fault_to_proposal_s": round(time.monotonic() - t0, 2),
    }
    if inc is None:
        return out
    with db.session() as s:
        row = s.exec(select(Trajectory).where(Trajectory.incident_id == inc.id)).first()
    if row is not None:
        out.update(
            tokens=row.usage.get("total_tokens", 0),
            model_calls=row.usage.get("calls", 0),
            investigation_s=row.usage.get("wall_seconds", 0.0),
            stop_reason=row.outcome.get("stop_reason"),
        )
    proposal = inc.details.get("proposal")
    out["kind"] = inc.kind
    if not proposal:
        return out
    out["proposal"] = proposal["fix"]
    assert inc.id is not None
    cmd = queue_command(  # bound to the text shown, as the button and `guard approve` are
        db,
        incident_id=inc.id,
        verb="approve",
        actor=Actor("bench", "human"),
        gate=default_gate({}, trusted=["bench"]),
        fix=digest(proposal["fix"]),
    )

    def settled() -> HumanCommand | None:
        with db.session() as s:
            c = s.get(HumanCommand, cmd.id)
            return c if c and c.status in (CommandStatus.done, CommandStatus.failed) else None

    done = await _wait(settled, 120)
    out["verified"] = bool(done and done.status == CommandStatus.done)
    out["running_3s_later"] = await asyncio.to_thread(bench.running_later, name)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    report = asyncio.run(run(endpoint()))
    print(json.dumps({"machine": machine(), "diagnosis": report}, indent=2))


if __name__ == "__main__":
    main()
