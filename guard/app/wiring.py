"""What a Guard is built from: each monitor's triage policy, and the agent with its notifier.

The agent layer knows no channel: the channel's settings it needs (how long a mute lasts) are
read here and passed in.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from guard.config import Settings
from guard.playbooks.models import MonitorSpec, Playbook
from guard.store.db import Database
from guard.triage import TriagePolicy

if TYPE_CHECKING:
    from guard.agent.loop import Agent


def triage_policies(settings: Settings, specs: Iterable[MonitorSpec]) -> dict[str, TriagePolicy]:
    """Each monitor's policy; an intake source's alerts resolve when the sender says so."""
    hooks = {f"intake:{s.id}": TriagePolicy(auto_resolve=True) for s in settings.intake}
    return hooks | {
        spec.id: TriagePolicy(
            for_count=spec.for_count,
            auto_resolve=settings.triage.auto_resolve
            if spec.auto_resolve is None
            else spec.auto_resolve,
        )
        for spec in specs
    }


def build_agent(settings: Settings, db: Database, playbooks: list[Playbook]) -> Agent:
    """The agent loop and the notifier it tells humans through (imported on first use: it
    loads skills and memory)."""
    from guard.agent.loop import Agent
    from guard.notify import build_notifier

    return Agent(
        settings,
        db,
        playbooks,
        notifier=build_notifier(settings, db),
        mute_for=settings.telegram.mute_for,
    )
