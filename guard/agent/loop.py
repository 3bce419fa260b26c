"""The agent: one worker per incident, with bounded concurrency; orchestration only.

intake -> recall -> diagnose -> decide (``policy``) -> remediate -> verify -> resolve, or ask a
human / escalate.

- Intake: triage's incident events start a worker per incident (``IncidentWorkers``); a muted
  target's incident is muted. Human answers (``guard approve|deny|reply``, a channel's buttons)
  are polled from the store and run in the same worker (``HumanAnswers``), so the CLI and the
  gateway work whether or not they share Guard's process.
- Recall ranks the matching skills with semantic memory (``Recaller``); diagnose gathers
  read-only evidence (``Diagnoser``); ``policy.decide`` picks a trusted skill the runaway guards
  allow, or asks a human (``Asker``).
- With a model configured (``llm.provider``), an incident that would go to a human is first
  investigated (``Investigator``, read-only tools); its proposal is the first option shown,
  and runs only once a human approves it. Every handling is recorded as a trajectory.
- ``Remediator`` runs a skill or a human's fix and settles it, in one direction: remediation
  -> learning (a human's fix that cured the incident becomes a skill) -> closing (resolved,
  remembered, the human told), each returning what it did. A failed run is retried only
  while the rate limit and the circuit breaker allow, then the incident escalates. It never
  loops.
- Parts of ``Agent``: ``Orchestration`` (one incident's recall, diagnosis and decision) and
  ``Recovery`` (interrupted work after a restart or a failed worker); this module wires the
  parts and polls human commands.
- A sandbox stays warm only while its incident needs work: ``Lifecycle.release`` frees it when
  the incident resolves (by a remedy, or because triage saw the check pass again) or is muted.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time

from loguru import logger

from guard import cluster
from guard.actions import ActionRegistry
from guard.agent import policy
from guard.agent.asking import Asker
from guard.agent.closing import Closer, spawn
from guard.agent.diagnosis import Diagnoser
from guard.agent.human import HumanAnswers
from guard.agent.investigation import Investigator
from guard.agent.learning import Learner
from guard.agent.recall import Recaller
from guard.agent.recovery import SWEEP_EVERY, SWEEP_RETRIES, Recovery
from guard.agent.remediation import Remediator
from guard.agent.steps import StepRunner
from guard.agent.verify import Verifier
from guard.agent.workers import IncidentWorkers
from guard.config import Settings
from guard.domain.records import IncidentEvent
from guard.harness.crashpoints import reached
from guard.incidents.commands import beat, take_queued
from guard.incidents.lifecycle import ENDED, Lifecycle
from guard.memory import IncidentMemory, open_memory
from guard.notify.base import Notifier
from guard.notify.console import ConsoleNotifier
from guard.playbooks.models import MonitorSpec, Playbook
from guard.redact import Redactor
from guard.sandbox.base import SandboxPool
from guard.sandbox.pool import WarmSandboxPool
from guard.skills.library import SkillLibrary
from guard.skills.remote import remote_for
from guard.skills.writer import SkillWriter
from guard.store.db import Database
from guard.store.models import HumanCommand

__all__ = ["STARTING_EVENTS", "SWEEP_RETRIES", "Agent"]

STARTING_EVENTS = frozenset({"opened", "reopened", "flapping"})
DEFAULT_MUTE_FOR = 3600.0  # seconds a mute without a duration lasts (the wiring passes its own)


class Agent(Recovery):
    """The agent: wires its parts, takes incident events and human commands, and works each
    incident in its own worker (``Orchestration``), resuming interrupted work (``Recovery``)."""

    def __init__(
        self,
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
    ) -> None:
        self.settings = settings
        self.db = db
        # shared with the verifier, the remediator and the diagnoser: ``use_playbooks`` updates
        # them in place
        self._specs: dict[str, MonitorSpec] = {}
        self._books: dict[str, Playbook] = {}
        self.use_playbooks(playbooks)
        specs, books = self._specs, self._books
        self.library = library or SkillLibrary(settings.skills_dir, settings.builtin_skills_dir)
        self.actions = actions or ActionRegistry()
        self.notifier: Notifier = notifier or ConsoleNotifier(db)
        self.memory = memory or open_memory(settings)
        self.redactor = Redactor()
        self.redactor.register_all(settings.secret_values(), name="config")
        self.sandboxes: SandboxPool = sandboxes or WarmSandboxPool(
            settings.sandbox, redactor=self.redactor
        )
        self.lifecycle = Lifecycle(db)
        self.lifecycle.on_release(self._release_sandbox)
        self.runner = StepRunner(
            settings, db, self.actions, Verifier(db, specs, settings), self.sandboxes, self.redactor
        )
        s = settings.skills
        self.skills_remote = remote_for(settings)  # None without skills.git_remote
        self.writer = SkillWriter(
            self.library,
            trust=s.learned_trust,
            git_commit=s.git_commit,
            git_author=s.git_author,
            verify_timeout=settings.agent.verify_timeout,
            review=s.review != "direct",
            taken=self.skills_remote.taken if self.skills_remote else None,
        )
        self.recaller = Recaller(self.library, self.memory)
        closer = Closer(self.lifecycle, self.memory, self.notifier)
        learner = Learner(
            self.lifecycle,
            closer,
            self.writer,
            self.actions,
            self.runner,
            self.library,
            self.skills_remote,
        )
        self.remediator = Remediator(
            settings, db, self.lifecycle, self.runner, self.library, learner, books
        )
        self.diagnoser = Diagnoser(
            self.lifecycle, self.runner, self.remediator, books, self.redactor
        )
        self.asker = Asker(settings, db, self.lifecycle, self.notifier)
        self.answers = HumanAnswers(
            settings,
            db,
            self.lifecycle,
            self.remediator,
            self.recaller,
            self.library,
            self.actions,
            mute_for=mute_for,
            asker=self.asker,
        )
        self.trajectories = self.remediator.trajectories
        self.investigator = (
            Investigator(settings.llm, self.model, self.redactor) if settings.llm.enabled else None
        )
        self.limits = policy.Limits(breaker_failures=settings.agent.breaker_failures)
        self._incidents = asyncio.Semaphore(settings.agent.max_concurrent_incidents)
        self.workers = IncidentWorkers(lambda incident_id: self.handle(incident_id))
        self._resumed: dict[int, int] = {}  # incident -> times the sweep resumed it
        self._loop: asyncio.AbstractEventLoop | None = None

    def use_playbooks(self, playbooks: list[Playbook]) -> None:
        """What the playbooks say from now on (a reload): monitors to verify against, the
        diagnostics and sandbox grants of each monitor's playbook."""
        specs = {m.id: m for book in playbooks for m in book.monitors}
        books = {m.id: book for book in playbooks for m in book.monitors}
        self._specs.clear()
        self._specs.update(specs)
        self._books.clear()
        self._books.update(books)

    # -- intake ---------------------------------------------------------------------------------

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Accept incident events from now on (before monitors start, so none is missed)."""
        self._loop = loop

    def on_events(self, events: list[IncidentEvent]) -> None:
        """Triage hook (called from triage's worker thread)."""
        loop = self._loop
        if loop is None or not self.settings.agent.enabled:
            return
        for ev in events:
            if ev.type in STARTING_EVENTS:
                reached("agent.opened_not_taken")
                loop.call_soon_threadsafe(self.submit, ev.incident_id)
            elif ev.type == "resolved" or ev.state in ENDED:
                loop.call_soon_threadsafe(self._release_when_idle, ev.incident_id)
            elif ev.type == "related":  # a signal joined: its question shows it, routed again
                loop.call_soon_threadsafe(spawn, self.asker.joined(ev.incident_id))

    async def run(self, stop: asyncio.Event) -> None:
        """Resume unfinished work, then serve human commands until ``stop`` is set."""
        self._loop = asyncio.get_running_loop()
        await self._reap_sandboxes()
        spawn(asyncio.to_thread(self._warm_memory))
        await self.resume()
        try:
            swept = time.monotonic()
            while not stop.is_set():
                try:  # a store error (locked, full, away) skips a round, never ends the loop
                    await asyncio.to_thread(beat, self.db, os.getpid())
                    await self.poll_commands()
                    if time.monotonic() - swept >= SWEEP_EVERY:
                        swept = time.monotonic()
                        await self.sweep()
                    await asyncio.to_thread(self.asker.expire_approvals)
                except Exception as exc:
                    logger.warning("agent: {}: {}; trying again", type(exc).__name__, exc)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.settings.agent.poll_interval)
        finally:
            await self.shutdown()

    def _warm_memory(self) -> None:
        try:
            self.memory.warm()
        except Exception as exc:
            logger.warning("semantic memory unavailable: {}", exc)

    async def shutdown(self) -> None:
        await self.workers.close()
        await self.notifier.flush()
        await self.sandboxes.close()
        await asyncio.to_thread(self.memory.close)

    async def drain(self) -> None:
        """Wait for every incident worker (``guard run --once`` and the CLI)."""
        await self.workers.drain()

    async def poll_commands(self) -> None:
        """Take the queued human answers, one per incident whose worker is free (only the
        leader takes them: a deposed one leaves them to the new leader)."""
        if not cluster.current().is_leader():
            return
        for cmd in await asyncio.to_thread(
            take_queued, self.db, self.workers.busy, cluster.current().fence
        ):
            self.submit(cmd.incident_id, self.process_command(cmd))

    async def process_command(self, cmd: HumanCommand) -> None:
        """Carry out one human answer (in the incident's worker); an incident an unmute
        opened again is taken at once, as a new one is (asked, unless a silence holds it)."""
        await self.answers.process(cmd)
        if cmd.verb == "unmute":
            await self.handle(cmd.incident_id)

    # -- sandboxes ------------------------------------------------------------------------------

    def _release_sandbox(self, incident_id: int) -> None:
        spawn(self.sandboxes.release(str(incident_id)))

    def _release_when_idle(self, incident_id: int) -> None:
        """Release the incident's sandbox once its worker (if one runs) is done with it."""
        self.workers.when_idle(incident_id, lambda: self.lifecycle.release(incident_id))
