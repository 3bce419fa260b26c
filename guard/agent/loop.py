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
- The ``Agent`` is given its parts (``AgentParts``, built by the composition root
  ``guard.app.compose``), the ``IncidentHandler`` (one incident's recall, diagnosis and
  decision) and ``Recovery`` (interrupted work after a restart or a failed worker); it takes
  incident events and human commands and hands them to the workers.
- A sandbox stays warm only while its incident needs work: ``Lifecycle.release`` frees it when
  the incident resolves (by a remedy, or because triage saw the check pass again) or is muted.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Coroutine
from typing import Any

from loguru import logger

from guard import cluster
from guard.agent.closing import spawn
from guard.agent.diagnosis import Diagnoser
from guard.agent.investigation import Investigation, Investigator
from guard.agent.orchestration import IncidentHandler
from guard.agent.parts import AgentParts
from guard.agent.recovery import SWEEP_EVERY, SWEEP_RETRIES, Recovery
from guard.agent.remediation import Remediator
from guard.agent.steps import StepRunner
from guard.agent.tools import Toolbox
from guard.agent.trajectories import TrajectoryLog
from guard.agent.workers import IncidentWorkers
from guard.config import Settings
from guard.domain.records import IncidentEvent
from guard.harness.crashpoints import reached
from guard.incidents.commands import beat, take_queued
from guard.incidents.lifecycle import ENDED, Lifecycle
from guard.memory import IncidentMemory
from guard.notify.base import Notifier
from guard.playbooks.models import Playbook
from guard.redact import Redactor
from guard.skills.library import SkillLibrary
from guard.store.db import Database
from guard.store.models import HumanCommand, Incident

__all__ = ["STARTING_EVENTS", "SWEEP_RETRIES", "Agent"]

STARTING_EVENTS = frozenset({"opened", "reopened", "flapping"})
BEAT_EVERY = 5.0  # seconds between heartbeats (a CLI trusts one for 15 s: ``agent_alive``)
EXPIRE_EVERY = 1.0  # seconds between looks for expired approvals (a faster poll: not each time)
DEFAULT_MUTE_FOR = 3600.0  # seconds a mute without a duration lasts (the wiring passes its own)


class Agent:
    """The agent: takes incident events and human commands, and works each incident in its
    own worker (``IncidentHandler``), resuming interrupted work (``Recovery``). Its parts
    are given (``guard.app.compose.compose_agent`` builds them)."""

    def __init__(self, parts: AgentParts) -> None:
        self.parts = parts
        self.handler = IncidentHandler(parts)
        self.workers = IncidentWorkers(lambda incident_id: self.handler.handle(incident_id))
        self.recovery = Recovery(parts, self.handler, self.workers)
        self._loop: asyncio.AbstractEventLoop | None = None
        parts.lifecycle.on_release(self._release_sandbox)

    # -- what callers reach through the agent --------------------------------------------------

    @property
    def settings(self) -> Settings:
        return self.parts.settings

    @property
    def db(self) -> Database:
        return self.parts.db

    @property
    def lifecycle(self) -> Lifecycle:
        return self.parts.lifecycle

    @property
    def library(self) -> SkillLibrary:
        return self.parts.library

    @property
    def notifier(self) -> Notifier:
        return self.parts.notifier

    @property
    def runner(self) -> StepRunner:
        return self.parts.runner

    @property
    def remediator(self) -> Remediator:
        return self.parts.remediator

    @property
    def diagnoser(self) -> Diagnoser:
        return self.parts.diagnoser

    @property
    def investigator(self) -> Investigator | None:
        return self.parts.investigator

    @property
    def trajectories(self) -> TrajectoryLog:
        return self.parts.trajectories

    @property
    def redactor(self) -> Redactor:
        return self.parts.redactor

    @property
    def memory(self) -> IncidentMemory:
        return self.parts.memory

    def toolbox(self, inc: Incident) -> Toolbox:
        """The read-only tools on ``inc`` (an investigation's, and an MCP client's)."""
        return self.handler.toolbox(inc)

    async def handle(self, incident_id: int) -> None:
        """Work one incident now (in the caller's task)."""
        await self.handler.handle(incident_id)

    async def investigate(self, inc: Incident, evidence: str) -> Investigation | None:
        return await self.handler.investigate(inc, evidence)

    def use_playbooks(self, playbooks: list[Playbook]) -> None:
        """What the playbooks say from now on (a reload)."""
        self.parts.use_playbooks(playbooks)

    def submit(self, incident_id: int, job: Coroutine[Any, Any, None] | None = None) -> None:
        """Work on an incident: ``job``, or a look at it (see ``IncidentWorkers``)."""
        self.workers.start(incident_id, job)

    async def resume(self) -> None:
        """After a restart: finish interrupted runs; pick up incidents nobody handled."""
        self._loop = asyncio.get_running_loop()
        await self.recovery.resume()

    async def sweep(self) -> None:
        await self.recovery.sweep()

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
                loop.call_soon_threadsafe(spawn, self.parts.asker.joined(ev.incident_id))

    async def run(self, stop: asyncio.Event) -> None:
        """Resume unfinished work, then serve human commands until ``stop`` is set."""
        self._loop = asyncio.get_running_loop()
        await self.recovery.reap_sandboxes()
        spawn(asyncio.to_thread(self._warm_memory))
        await self.resume()
        try:
            swept = time.monotonic()
            beaten = expired = -float("inf")
            while not stop.is_set():
                try:  # a store error (locked, full, away) skips a round, never ends the loop
                    if time.monotonic() - beaten >= BEAT_EVERY:  # a write: not every poll
                        await asyncio.to_thread(beat, self.db, os.getpid())
                        beaten = time.monotonic()
                    await self.poll_commands()
                    if time.monotonic() - swept >= SWEEP_EVERY:
                        swept = time.monotonic()
                        await self.sweep()
                    if time.monotonic() - expired >= EXPIRE_EVERY:
                        await asyncio.to_thread(self.parts.asker.expire_approvals)
                        expired = time.monotonic()
                except Exception as exc:
                    logger.warning("agent: {}: {}; trying again", type(exc).__name__, exc)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.settings.agent.poll_interval)
        finally:
            await self.shutdown()

    def _warm_memory(self) -> None:
        try:
            self.parts.memory.warm()
        except Exception as exc:
            logger.warning("semantic memory unavailable: {}", exc)

    async def shutdown(self) -> None:
        await self.workers.close()
        await self.parts.notifier.flush()
        await self.parts.sandboxes.close()
        await asyncio.to_thread(self.parts.memory.close)

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
        await self.parts.answers.process(cmd)
        if cmd.verb == "unmute":
            await self.handler.handle(cmd.incident_id, unmuted=True)

    # -- sandboxes ------------------------------------------------------------------------------

    def _release_sandbox(self, incident_id: int) -> None:
        spawn(self.parts.sandboxes.release(str(incident_id)))

    def _release_when_idle(self, incident_id: int) -> None:
        """Release the incident's sandbox once its worker (if one runs) is done with it."""
        self.workers.when_idle(incident_id, lambda: self.lifecycle.release(incident_id))
