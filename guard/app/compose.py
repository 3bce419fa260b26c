"""The composition root: the one place the agent's collaborators are built and wired.

``compose_agent`` builds every part the agent works with (``AgentParts``) from the settings,
the store and the playbooks, then the ``Agent`` that takes incidents, which builds none of its
own. A caller may give its own notifier, sandbox pool, action registry, skill library or
memory (the CLI, tests); everything else is made here.
"""

from __future__ import annotations

import asyncio
from typing import Any

from guard.actions import ActionRegistry
from guard.agent import policy
from guard.agent.asking import Asker
from guard.agent.closing import Closer
from guard.agent.diagnosis import Diagnoser
from guard.agent.human import HumanAnswers
from guard.agent.investigation import Investigator
from guard.agent.learning import Learner
from guard.agent.loop import DEFAULT_MUTE_FOR, Agent
from guard.agent.parts import AgentParts, use_playbooks
from guard.agent.recall import Recaller
from guard.agent.remediation import Remediator
from guard.agent.steps import StepRunner
from guard.agent.verify import Verifier
from guard.config import Settings
from guard.incidents.lifecycle import Lifecycle
from guard.llm import ModelProvider, build_provider
from guard.llm.mcp_servers import ToolServers
from guard.memory import IncidentMemory, open_memory
from guard.notify.base import Notifier
from guard.notify.console import ConsoleNotifier
from guard.playbooks.models import MonitorSpec, Playbook
from guard.redact import Redactor
from guard.sandbox.base import SandboxPool
from guard.sandbox.pool import WarmSandboxPool
from guard.skills.library import SkillLibrary
from guard.skills.writer import SkillWriter
from guard.store import audit
from guard.store.db import Database


def compose_agent(
    settings: Settings,
    db: Database,
    playbooks: list[Playbook],
    *,
    notifier: Notifier | None = None,
    sandboxes: SandboxPool | None = None,
    actions: ActionRegistry | None = None,
    library: SkillLibrary | None = None,
    memory: IncidentMemory | None = None,
    mute_for: float = DEFAULT_MUTE_FOR,
) -> Agent:
    """The agent for ``settings``, every collaborator built and wired here: remediation ->
    learning -> closing in one direction, the verifier, remediator and diagnoser sharing the
    playbooks' maps."""
    specs: dict[str, MonitorSpec] = {}
    books: dict[str, Playbook] = {}
    use_playbooks(specs, books, playbooks)
    library = library or SkillLibrary(settings.skills_dir, settings.builtin_skills_dir)
    actions = actions or ActionRegistry()
    notifier = notifier or ConsoleNotifier(db)
    memory = memory or open_memory(settings)
    redactor = Redactor()
    redactor.register_all(settings.secret_values(), name="config")
    sandboxes = sandboxes or WarmSandboxPool(
        settings.sandbox, redactor=redactor, cluster=settings.kubernetes
    )
    lifecycle = Lifecycle(db)
    runner = StepRunner(settings, db, actions, Verifier(db, specs, settings), sandboxes, redactor)
    s = settings.skills
    skills_remote = None  # without skills.git_remote: its forge client (httpx) is not loaded
    if settings.skills.git_remote:
        from guard.skills.remote import remote_for

        skills_remote = remote_for(settings)
    writer = SkillWriter(
        library,
        trust=s.learned_trust,
        git_commit=s.git_commit,
        git_author=s.git_author,
        verify_timeout=settings.agent.verify_timeout,
        review=s.review != "direct",
        taken=skills_remote.taken if skills_remote else None,
    )
    recaller = Recaller(library, memory)
    closer = Closer(lifecycle, memory, notifier)
    learner = Learner(lifecycle, closer, writer, actions, runner, library, skills_remote)
    remediator = Remediator(settings, db, lifecycle, runner, library, learner, books)
    asker = Asker(settings, db, lifecycle, notifier)

    def model() -> ModelProvider:
        """A fresh provider for one investigation (``llm`` and its fallbacks)."""
        provider = build_provider(settings.llm, redactor)
        assert provider is not None, "llm.provider is none"
        return provider

    parts = AgentParts(
        settings=settings,
        db=db,
        lifecycle=lifecycle,
        library=library,
        memory=memory,
        actions=actions,
        redactor=redactor,
        notifier=notifier,
        sandboxes=sandboxes,
        runner=runner,
        recaller=recaller,
        remediator=remediator,
        diagnoser=Diagnoser(lifecycle, runner, remediator, books, redactor),
        asker=asker,
        answers=HumanAnswers(
            settings,
            db,
            lifecycle,
            remediator,
            recaller,
            library,
            actions,
            mute_for=mute_for,
            asker=asker,
        ),
        investigator=(
            Investigator(settings.llm, model, redactor, tool_servers(settings, db, redactor))
            if settings.llm.enabled
            else None
        ),
        specs=specs,
        books=books,
        limits=policy.Limits(breaker_failures=settings.agent.breaker_failures),
        slots=asyncio.Semaphore(settings.agent.max_concurrent_incidents),
    )
    return Agent(parts)


def tool_servers(settings: Settings, db: Database, redactor: Redactor) -> ToolServers:
    """The team's MCP servers for the investigation, each call audited (``mcp.call``)."""

    def audited(subject: str, data: dict[str, Any]) -> None:
        with db.session() as session:
            audit.append(session, actor="model", action="mcp.call", subject=subject, data=data)

    return ToolServers(settings.llm.mcp_servers, redactor, audited)
