"""The crash matrix's hold scenario (``bench.crash`` registers it: ``scenarios``).

A watched container turns unhealthy; the built-in trusted skill docker-restart-unhealthy
restarts it (its PID 1 ignores SIGTERM: the restart kills it, exit 137), waits, verifies. The
remedy holds the container from before its first step until its verification ended and
``agent.settle`` passed, so the restart's own exit opens nothing. Guard is SIGKILLed while the
hold is placed, while the restart acts or has acted, and after verification (the hold is
settling), then restarted: the hold is honoured or ended cleanly, and no self-inflicted
incident appears (one incident, resolved; every hold has an end).
"""

from __future__ import annotations

import contextlib
import shutil
import time
from typing import Any

import yaml

from bench.crash_checks import audit_check, stuck_check, telegram_check, telegram_config
from bench.crash_run import REPO, Check, Run, Scenario
from bench.crash_scenarios import watch_containers

SKILL = "docker-restart-unhealthy"


class Hold(Scenario):
    """The scenario (``bench.crash.scenarios`` lists it)."""

    name = "hold"
    what = (
        "a container turns unhealthy; the trusted skill restarts it (exit 137) under a hold: "
        "one incident, the restart's exit an expected effect, every hold ended"
    )
    points = ("remedy.held", "step.started", "step.ended", "verify.before_state")

    def setup(self, run: Run) -> None:
        client, image, label = watch_containers(run)
        skills = run.home.root / "skills"
        skills.mkdir()
        shutil.copytree(REPO / "skills" / SKILL, skills / SKILL)
        shutil.copytree(REPO / "skills" / "docker-start-exited", skills / "docker-start-exited")
        spec_path = skills / SKILL / "skill.yaml"
        spec = yaml.safe_load(spec_path.read_text())
        spec["steps"] = [
            {
                "action": "docker.restart",
                "args": {"container": "{{ incident.target }}", "timeout": 1},
            },
            {"wait": "3s"},
            {"verify": {"timeout": "60s", "interval": "1s"}},
        ]
        spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))
        run.home.write_config(telegram_config(run, agent={"settle": "3s"}))
        run.notes["client"] = client
        run.notes["victim"] = client.containers.create(
            image,
            ["sh", "-c", "rm -f /tmp/sick; exec sleep 3600"],  # PID 1 ignores SIGTERM
            name=f"guard-crash-held-{label}",
            labels={"guard.crash.watch": label, "guard.test": "1"},
            network_mode="none",
            user="0",
            healthcheck={
                "test": ["CMD-SHELL", "test ! -f /tmp/sick"],
                "interval": 1_000_000_000,
                "timeout": 1_000_000_000,
                "retries": 1,
            },
        )
        run.notes["victim"].start()

    def drive(self, run: Run) -> None:
        if not run.notes.get("sick") and "guard running" in run.log():
            time.sleep(0.5)  # the events stream is attached
            run.notes["victim"].exec_run(["touch", "/tmp/sick"])
            run.notes["sick"] = True

    def holds(self, run: Run) -> list[tuple[Any, ...]]:
        return run.db("select id, ends_at, closed_at from remedy_hold")

    def done(self, run: Run) -> bool:
        if not any(i["state"] == "resolved" for i in run.incidents()):
            return False
        time.sleep(4)  # the settle period passes: a late self-inflicted incident opens now
        return True

    def teardown(self, run: Run) -> None:
        with contextlib.suppress(Exception):
            run.notes["victim"].remove(force=True)
        with contextlib.suppress(Exception):
            run.notes["client"].close()

    def checks(self, run: Run) -> dict[str, Check]:
        incs = run.incidents()
        kinds = sorted(i["kind"] for i in incs)
        holds = self.holds(run)
        open_ended = [h[0] for h in holds if h[1] is None and h[2] is None]
        return {
            "lost/stuck": stuck_check(run, 1, {"resolved"}),
            "no self-inflicted": (kinds == ["container_unhealthy"], f"incidents: {kinds}"),
            "hold ended": (bool(holds) and not open_ended, f"holds {holds}"),
            "telegram": telegram_check(run),
            "audit": audit_check(run),
        }
