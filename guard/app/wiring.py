"""What a Guard is built from: each monitor's triage policy, the agent with its notifier
(routed by ``routes:``, ``guard.notify.routing``), and the page outbox's worker.

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
    from guard.notify.pagers.worker import PageWorker
    from guard.notify.quiet import QuietNotifier


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
    settings: Settings, db: Database, playbooks: list[Playbook]
) -> tuple[Agent, QuietNotifier | None]:
    """The agent loop and the notifier it tells humans through (imported on first use: it
    loads skills and memory), and the quiet hours around that notifier (None when none are
    configured), for whoever runs their release (``guard.notify.quiet.release_held``)."""
    from guard.app.compose import compose_agent
    from guard.notify import build_notifier
    from guard.notify.kinds import chat_setting
    from guard.notify.quiet import wrap_quiet
    from guard.notify.routing import Router

    router = Router(settings)
    notifier = build_notifier(settings, db, router)
    quiet = wrap_quiet(notifier, settings, db)
    agent = compose_agent(
        settings,
        db,
        playbooks,
        # quiet hours hold only the asking: a known remedy still runs
        notifier=notifier if quiet is None else quiet,
        mute_for=chat_setting(settings, "mute_for"),
    )
    # routes match on playbook names: the agent's monitor -> playbook map, kept current by
    # ``Agent.use_playbooks`` on every reload
    router.use_books(agent.remediator.books)
    return agent, quiet


def page_worker(settings: Settings, db: Database) -> PageWorker | None:
    """The worker that delivers pages to ``notifiers:`` (None when none is configured); runs
    in ``guard run`` while this replica leads."""
    from guard.notify import build_page_worker

    return build_page_worker(settings, db)
