"""``guard demo``: the whole loop on the local Docker engine, start to finish, in a minute.

A victim container is started and killed; Guard opens an incident and, knowing no remedy, asks
a human; the demo then answers as that human (``guard reply N -- docker.restart victim``);
Guard verifies the fix, learns it as a skill and commits it to git; the fault is injected
again and Guard heals it by itself. Everything lives in a temporary folder and is removed at
the end, with the container; the victim image (``guard-victim:latest``, a static busybox of a
megabyte or two) stays, so the README's ``docker run ... guard-victim`` has something to run.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from sqlmodel import select

from guard.app import Guard
from guard.config import Settings, load_settings
from guard.incidents.commands import queue_command
from guard.incidents.gate import Actor, default_gate
from guard.notify.kinds import FALLBACK
from guard.notify.outbox import queue
from guard.playbooks import load_playbooks
from guard.store.models import Incident

IMAGE = "guard-victim:latest"  # kept: the quick start runs its own victim from it


@dataclass
class Timings:
    marks: dict[str, float] = field(default_factory=dict)

    def mark(self, name: str) -> None:
        self.marks[name] = time.monotonic()

    def between(self, a: str, b: str) -> float:
        return self.marks[b] - self.marks[a]


def ensure_victim_image(client: Any) -> bool:
    """Build ``IMAGE`` offline unless the engine has it; True when it was built."""
    from guard.sandbox import images

    if images.image_exists(client, IMAGE):
        return False
    images.build_busybox(client, IMAGE)
    return True


def _settings(root: Path) -> Settings:
    return load_settings(
        None,
        data_dir=root / "data",
        playbooks_dir=root / "playbooks",
        skills_dir=root / "skills",
        log_level="WARNING",
        agent={"poll_interval": 0.2, "verify_timeout": 20.0},
        triage={"flap_window": 1.0},
        skills={"git_author": "Guard demo <guard@localhost>"},
    )


async def _until(check: Callable[[], Any], within: float, what: str) -> Any:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        found = await asyncio.to_thread(check)
        if found:
            return found
        await asyncio.sleep(0.05)
    raise TimeoutError(f"the demo timed out waiting for {what}")


class Demo:
    def __init__(self, console: Console) -> None:
        self.console = console
        self.t = Timings()

    def say(self, text: str) -> None:
        self.console.print(text)

    async def run(self) -> dict[str, float]:
        from guard.util.docker_client import Timeouts, docker_client

        client = docker_client(Timeouts.call, ping=False)
        if ensure_victim_image(client):
            self.say(f"[dim]built the victim image {IMAGE} offline (static busybox)[/dim]")
        label = uuid.uuid4().hex[:10]
        victim: Any = None
        with tempfile.TemporaryDirectory(prefix="guard-demo-") as tmp:
            root = Path(tmp)
            try:
                victim = client.containers.run(
                    IMAGE,
                    ["sleep", "3600"],
                    name=f"victim-{label[:6]}",
                    detach=True,
                    labels={"guard.app.demo": label},
                    network_mode="none",
                )
                return await self._scenario(root, client, victim, label)
            finally:
                if victim is not None:
                    with contextlib.suppress(Exception):
                        victim.remove(force=True)
                client.close()

    async def _scenario(self, root: Path, client: Any, victim: Any, label: str) -> dict[str, float]:
        (root / "playbooks").mkdir()
        (root / "skills").mkdir()
        (root / "playbooks" / "demo.yaml").write_text(
            yaml.safe_dump(
                {
                    "name": "demo",
                    "monitors": [
                        {
                            "id": "victims",
                            "type": "docker",
                            "selector": {"label": f"guard.app.demo={label}"},
                            "every": "1h",
                        }
                    ],
                }
            )
        )
        settings = _settings(root)
        guard = Guard(settings, load_playbooks(settings.playbooks_dir))
        runner = asyncio.create_task(guard.run())
        db = guard.db

        def incident(**match: Any) -> Incident | None:
            with db.session() as s:
                for inc in s.exec(select(Incident).order_by(Incident.id.desc())).all():  # type: ignore[union-attr]
                    if all(getattr(inc, k) == v for k, v in match.items()):
                        return inc
            return None

        def printed(incident_id: int, role: str, after: int = 0) -> int:
            """The id of a message of ``role`` about the incident (newer than ``after``) the
            console printed, once nothing waits to be: its sender lags on a loaded machine,
            and the story must not run ahead of it. 0 while not."""
            sent = queue.last_sent(db, FALLBACK, incident_id, role, after)
            return 0 if queue.pending(db, FALLBACK) else sent

        try:
            await asyncio.sleep(1.0)  # monitors scheduled, events stream attached
            self.say(
                f"[bold]1.[/bold] victim container [cyan]{victim.name}[/cyan] is running; "
                "killing it"
            )
            self.t.mark("kill1")
            killed_at = time.time()
            await asyncio.to_thread(victim.kill)
            first = await _until(lambda: incident(target=victim.name), 30, "the incident")
            detection = first.opened_at.timestamp() - killed_at
            self.say(f"   incident #{first.id} opened: {first.title}")
            await _until(lambda: incident(id=first.id, state="awaiting_human"), 60, "the ask")
            asked = await _until(lambda: printed(first.id, "incident"), 30, "the question shown")
            self.t.mark("asked")
            self.say(
                "[bold]2.[/bold] no skill matches, so Guard asked a human (above). "
                "The human answers:"
            )
            fix = f"docker.restart {victim.name}"
            self.say(f"   [green]$ guard reply {first.id} -- {fix}[/green]")
            self.t.mark("replied")
            queue_command(
                db,
                incident_id=first.id,
                verb="reply",
                actor=Actor("demo", "human"),
                gate=default_gate({}, trusted=["demo"]),
                fix=fix,
            )
            done = await _until(lambda: incident(id=first.id, state="resolved"), 60, "the fix")
            self.t.mark("learned")
            await _until(lambda: printed(first.id, "reply", asked), 30, "what was learned")
            skill, commit = done.details.get("learned_skill"), done.details.get("skill_commit")
            self.say(
                f"[bold]3.[/bold] the fix cured it (verified); learned skill "
                f"[cyan]{skill}[/cyan], commit {str(commit)[:10]}:"
            )
            log = await asyncio.to_thread(
                subprocess.run,
                ["git", "log", "-1", "--stat", "--format=%h %s%n%n%b"],
                cwd=root / "skills",
                capture_output=True,
                text=True,
                check=False,
            )
            for line in log.stdout.strip().splitlines():
                self.say(f"   [dim]{line}[/dim]")
            await asyncio.sleep(1.5)  # past the flap window: the next fault is a new incident
            self.say("[bold]4.[/bold] the same fault again: killing the victim")
            self.t.mark("kill2")
            await asyncio.to_thread(victim.kill)
            second = await _until(
                lambda: (i := incident(target=victim.name)) and i.id != first.id and i,
                30,
                "the second incident",
            )
            healed = await _until(
                lambda: incident(id=second.id, state="resolved"), 60, "the self-heal"
            )
            self.t.mark("healed2")
            await _until(lambda: not queue.pending(db, FALLBACK), 30, "the last messages")
            self.say(
                f"   incident #{second.id} healed by itself: "
                f"{healed.details.get('resolved_by')}, no question asked"
            )
        finally:
            guard.stop()
            await runner
        return {
            "detection_s": round(detection, 3),
            "kill_to_question_s": round(self.t.between("kill1", "asked"), 3),
            "human_fix_to_learned_s": round(self.t.between("replied", "learned"), 3),
            "second_fault_mttr_s": round(self.t.between("kill2", "healed2"), 3),
        }
