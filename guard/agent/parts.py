"""What the agent works with: its collaborators, built once by the composition root
(``guard.app.compose``) and handed to the ``Agent``, the ``IncidentHandler`` and ``Recovery``,
none of which builds another's parts."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from guard.actions import ActionRegistry
from guard.agent import policy
from guard.agent.asking import Asker
from guard.agent.diagnosis import Diagnoser
from guard.agent.human import HumanAnswers
from guard.agent.investigation import Investigator
from guard.agent.recall import Recaller
from guard.agent.remediation import Remediator
from guard.agent.steps import StepRunner
from guard.agent.trajectories import TrajectoryLog
from guard.config import Settings
from guard.incidents.lifecycle import Lifecycle
from guard.memory import IncidentMemory
from guard.notify.base import Notifier
from guard.playbooks.models import MonitorSpec, Playbook
from guard.redact import Redactor
from guard.sandbox.base import SandboxPool
from guard.skills.library import SkillLibrary
from guard.store.db import Database


@dataclass
class AgentParts:
    """The agent's collaborators. ``specs`` and ``books`` are shared, by reference, with the
    verifier, the remediator and the diagnoser: ``use_playbooks`` updates them in place."""

    settings: Settings
    db: Database
    lifecycle: Lifecycle
    library: SkillLibrary
    memory: IncidentMemory
    actions: ActionRegistry
    redactor: Redactor
    notifier: Notifier
    sandboxes: SandboxPool
    runner: StepRunner
    recaller: Recaller
    remediator: Remediator
    diagnoser: Diagnoser
    asker: Asker
    answers: HumanAnswers
    investigator: Investigator | None
    specs: dict[str, MonitorSpec]
    books: dict[str, Playbook]
    limits: policy.Limits = field(default_factory=policy.Limits)
    slots: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(1))

    @property
    def trajectories(self) -> TrajectoryLog:
        return self.remediator.trajectories

    def use_playbooks(self, playbooks: list[Playbook]) -> None:
        """What the playbooks say from now on (a reload): monitors to verify against, the
        diagnostics and sandbox grants of each monitor's playbook."""
        use_playbooks(self.specs, self.books, playbooks)


def use_playbooks(
    specs: dict[str, MonitorSpec], books: dict[str, Playbook], playbooks: list[Playbook]
) -> None:
    """Fill ``specs`` and ``books`` (in place) from ``playbooks``."""
    specs.clear()
    specs.update({m.id: m for book in playbooks for m in book.monitors})
    books.clear()
    books.update({m.id: book for book in playbooks for m in book.monitors})
