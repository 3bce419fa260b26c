"""What a user counts on the stack, read from the store (sqlite on the data dir), the CLI and
the engine's events: incidents opened and reopened in a window, questions asked, restarts,
remedies, and the figures each fault leaves (``Flow.figures``, printed for docs/FLOWS.md).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.conftest import GuardHome
from tests.flows.stack import Engine, Stack
from tests.helpers.agent import db_rows, incidents, show


def stamp(text: str) -> float:
    """A store or CLI timestamp (ISO, naive ones are UTC) as epoch seconds."""
    when = datetime.fromisoformat(text.replace(" ", "T"))
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


@dataclass
class Flow:
    """One Guard watching one stack for the whole module, and what happened to it."""

    home: GuardHome
    stack: Stack
    engine: Engine
    log: Path
    faults: list[tuple[str, float]] = field(default_factory=list)  # (fault, when injected)
    figures: dict[str, dict[str, Any]] = field(default_factory=dict)
    kept: dict[str, int] = field(default_factory=dict)  # incident ids later scenarios use

    def fault(self, name: str) -> float:
        """Note that the test injects fault ``name`` now; returns the time."""
        now = time.time()
        self.faults.append((name, now))
        return now

    def opened_since(self, since: float, until: float = math.inf) -> list[dict[str, Any]]:
        return [i for i in incidents(self.home) if since <= stamp(i["opened_at"]) < until]

    def reopens(self) -> list[tuple[int, float]]:
        """Every reopening (resolved -> open): the incident and when."""
        rows = db_rows(
            self.home,
            "SELECT incident_id, at FROM incident_timeline WHERE type = 'state_changed' "
            "AND from_state = 'resolved' AND to_state = 'open'",
        )
        return [(int(i), stamp(str(at))) for i, at in rows]

    def reopened_since(self, since: float, until: float = math.inf) -> list[int]:
        return [i for i, at in self.reopens() if since <= at < until]

    def questions(self, ids: list[int] | None, since: float = 0.0, until: float = math.inf) -> int:
        """Questions asked to humans (``asked_human`` entries) about ``ids`` (None: any)."""
        rows = db_rows(
            self.home, "SELECT incident_id, at FROM incident_timeline WHERE type = 'asked_human'"
        )
        return sum(
            1 for i, at in rows if (ids is None or i in ids) and since <= stamp(str(at)) < until
        )

    def runs(self, since: float = 0.0, until: float = math.inf) -> list[dict[str, Any]]:
        """Remedy runs started since ``since``: skill or human fix, target, status, times."""
        rows = db_rows(
            self.home,
            "SELECT incident_id, skill, target, origin, status, started_at, finished_at "
            "FROM remediation_run ORDER BY id",
        )
        keys = ("incident", "skill", "target", "origin", "status", "started", "finished")
        found = [dict(zip(keys, row, strict=True)) for row in rows]
        for run in found:
            run["started"] = stamp(str(run["started"]))
            run["finished"] = stamp(str(run["finished"])) if run["finished"] else None
        return [r for r in found if since <= r["started"] < until]

    def restarts(self, since: float, until: float = math.inf) -> dict[str, int]:
        """Per service, the container starts the engine reported in the window."""
        return {
            service: len(
                [
                    e
                    for e in self.engine.of(self.stack.name(service), "start", since)
                    if e["time"] < until
                ]
            )
            for service in self.stack.containers
        }

    def monitors_of(self, incident_id: int) -> set[str]:
        """The monitors that saw an incident: its own and its related signals'."""
        view = show(self.home, incident_id)
        return {view["monitor_id"], *(r["monitor"] for r in view["related"])}

    def record(self, fault: str, since: float, until: float = math.inf) -> dict[str, Any]:
        """The figures of ``fault`` (from its injection to ``until``), printed and kept for
        the docs: incidents opened (and how: kind, the monitors that joined), reopened,
        questions asked, container starts per service, remedies run."""
        opened = self.opened_since(since, until)
        figures = {
            "incidents": len(opened),
            "how": [
                f"{i['kind']} ({', '.join(sorted(self.monitors_of(i['id'])))})" for i in opened
            ],
            "reopened": len(self.reopened_since(since, until)),
            "questions": self.questions(None, since, until),
            "restarts": {k: v for k, v in self.restarts(since, until).items() if v},
            "remedies": len(self.runs(since, until)),
        }
        self.figures[fault] = figures
        print(f"FLOW {fault}: {figures}")
        return figures


def healed_truth(flow: Flow) -> dict[str, int]:
    """How each incident resolved in the last day was healed, from the store's rows alone:
    by the origin of the verified run that resolved it (the last one started after its last
    reopening), ``recovered`` with none. An incident reopened and resolved again counts once,
    by what resolved it that time."""
    home = flow.home
    day = time.time() - 86400
    resolved = db_rows(home, "SELECT id, resolved_at FROM incident WHERE state = 'resolved'")
    reopened: dict[int, float] = {}
    for i, at in flow.reopens():
        reopened[i] = max(at, reopened.get(i, 0.0))
    truth = {"healed_by_skill": 0, "healed_by_human": 0, "recovered": 0}
    for incident, resolved_at in resolved:
        end = stamp(str(resolved_at))
        if end < day:
            continue
        runs = [
            r
            for r in flow.runs(reopened.get(int(incident), 0.0), end + 1)
            if r["incident"] == incident and r["status"] == "verified"
        ]
        key = {"skill": "healed_by_skill", "human": "healed_by_human"}
        truth[key[runs[-1]["origin"]] if runs else "recovered"] += 1
    return truth
