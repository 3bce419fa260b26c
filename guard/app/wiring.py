"""What a Guard is built from: each monitor's triage policy, and the agent, asking through the
notification pipeline (``guard.notify.pipeline``).

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
    from guard.notify.pipeline import Pipeline


def triage_policies(settings: Settings, specs: Iterable[MonitorSpec]) -> dict[str, TriagePolicy]:
    """Each monitor's policy; an intake source's alerts resolve when the sender says so."""
    hooks = {f"intake:{s.id}": TriagePolicy(auto_resolve=True) for s in settings.intake}
    return hooks | {
        spec.id: TriagePolicy(
            for_count=spec.for_count,
            auto_resolve=settings.triage.auto_resolve
            if spec.auto_resolve is None
            else spec.auto_resolve,
            resolve_after=float(getattr(spec, "resolve_after", 0.0)),
        )
        for spec in specs
    }


def build_agent(
    settings: Settings, db: Database, playbooks: list[Playbook], pipeline: Pipeline
) -> Agent:
    """The agent loop (imported on first use: it loads skills and memory), asking through
    ``pipeline`` (``guard.notify.pipeline``: quiet hours hold only the asking)."""
    from guard.app.compose import compose_agent

    agent = compose_agent(
        settings, db, playbooks, notifier=pipeline.asking, mute_for=pipeline.mute_for
    )
    # routes match on playbook names: the agent's monitor -> playbook map, kept current by
    # ``Agent.use_playbooks`` on every reload
    pipeline.router.use_books(agent.remediator.books)
    return agent
