"""Holding a target while a remedy works on it, so its own effects are not incidents.

Every remediation run (a skill, a human's fix, an approved proposal: all go through the
``Remediator``) places a ``Hold`` on its incident's target before its first step: what the
run's actions explain (``EFFECTS``), the incident's service and the services that depend on
it. Its action steps mark when they acted; its end starts the settle period
(``agent.settle``). Triage reads the hold (``guard.triage.holds``).

One remedy per target at a time, across incidents: a run whose target another incident's
hold still covers waits for that hold to end (noted on its timeline), at most ``WAIT_LIMIT``
seconds; then it is refused and noted, and the sweep takes the incident up again later.
"""

from __future__ import annotations

import asyncio
import time

from sqlmodel import Session

from guard.config import Settings
from guard.incidents.lifecycle import Lifecycle
from guard.playbooks.models import Playbook
from guard.playbooks.services import service_map
from guard.skills.model import Step
from guard.store import holds
from guard.store.db import Database
from guard.store.models import Incident, RemediationRun

EXIT, HEALTH, HTTP, LOGS = "exit", "health", "http", "logs"
_STOPS = (EXIT, HEALTH, HTTP, LOGS)  # it goes down and comes back
_STARTS = (HEALTH, HTTP, LOGS)  # it was down: it comes up (its exit is the fault's)
EFFECTS: dict[str, tuple[str, ...]] = {
    "docker.restart": _STOPS,
    "docker.stop": _STOPS,
    "docker.start": _STARTS,
    "docker.rollback": _STOPS,  # recreated: the old one stops, the new one starts
    "compose.up": _STOPS,  # may recreate the service's container
    "k8s.rollout_restart": _STOPS,
    "k8s.delete_pod": _STOPS,
    "k8s.rollout_undo": _STOPS,
    "k8s.rollback": _STOPS,
    "k8s.scale": _STOPS,
    "railway.restart": _STOPS,
    "railway.redeploy": _STOPS,
    "railway.rollback": _STOPS,
}
"""What each action's effects on its target may look like. An action not listed (a sandboxed
script, an HTTP request) explains nothing: its hold only keeps other remedies off the target."""

WAIT_LIMIT = 600.0  # seconds a run waits for another incident's hold on its target
POLL = 0.5


def explains(steps: list[Step]) -> tuple[str, list[str]]:
    """The acting steps' names and the effect classes they explain together."""
    names = [s.action for s in steps if s.kind == "action" and s.action is not None]
    found = {e for name in names for e in EFFECTS.get(name, ())}
    return ",".join(dict.fromkeys(names)), sorted(found)


class Holding:
    """Places, waits for, marks and ends the holds of the runs of one ``Remediator``."""

    def __init__(
        self, settings: Settings, db: Database, lifecycle: Lifecycle, books: dict[str, Playbook]
    ) -> None:
        self.settings = settings
        self.db = db
        self.lifecycle = lifecycle
        self.books = books  # the Remediator's: playbook reloads update it in place

    def dependants(self, service: str | None) -> list[str]:
        """``service`` and every service that (transitively) depends on it."""
        if service is None:
            return []
        unique = {id(b): b for b in self.books.values()}
        found = service_map(unique.values())
        return [service, *sorted(s for s, needs in found.needs.items() if service in needs)]

    async def free(self, inc: Incident) -> bool:
        """Wait until no other incident's remedy holds ``inc``'s target; False: refused."""
        assert inc.id is not None
        deadline = time.monotonic() + WAIT_LIMIT
        told = False
        while True:
            with self.db.session() as session:
                other = holds.holding(session, inc.target, besides=inc.id)
            if other is None:
                return True
            if not told:
                self.lifecycle.note(
                    inc.id,
                    "remedy_waiting",
                    f"waiting: incident #{other.incident_id}'s {other.action or 'remedy'} "
                    f"holds {inc.target}; one remedy acts on a target at a time",
                    holder=other.incident_id,
                )
                told = True
            if time.monotonic() >= deadline:
                self.lifecycle.note(
                    inc.id,
                    "remedy_refused",
                    f"refused: {inc.target} is still held by incident #{other.incident_id} "
                    f"after {WAIT_LIMIT:g}s; it will be taken up again",
                    holder=other.incident_id,
                )
                return False
            await asyncio.sleep(POLL)

    def place(
        self, session: Session, run: RemediationRun, inc: Incident, steps: list[Step]
    ) -> None:
        """The run's hold, in the transaction that stores the run (before any step acts)."""
        assert run.id is not None and inc.id is not None
        action, effects = explains(steps)
        service = (inc.details or {}).get("service")
        session.add(
            holds.Hold(
                incident_id=inc.id,
                run_id=run.id,
                target=run.target or inc.target,
                service=service,
                services=self.dependants(service),
                action=action,
                explains=effects,
                settle=self.settings.agent.settle,
            )
        )

    def acted(self, run_id: int, *, acting: bool) -> None:
        with self.db.session() as session:
            holds.acted(session, run_id, acting=acting)

    def ended(self, run_id: int) -> None:
        """The run's verification ended: the settle period starts."""
        with self.db.session() as session:
            holds.settle(session, run_id, self.settings.agent.settle)
