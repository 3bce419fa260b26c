"""How an incident's handling ends well: resolved, remembered, its sandbox released, and the
human who was asked told."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from loguru import logger

from guard.harness import spans
from guard.harness.crashpoints import reached
from guard.incidents.lifecycle import Lifecycle
from guard.memory import IncidentMemory
from guard.notify.base import IncidentUpdate, Notifier
from guard.store.models import Incident, IncidentState

Spawn = Callable[[Coroutine[Any, Any, None]], None]


def spawn(coro: Coroutine[Any, Any, None]) -> None:
    """Run ``coro`` in the background; its failure is logged by the task, never raised here."""
    task = asyncio.get_running_loop().create_task(coro)
    task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)


class Closer:
    def __init__(self, lifecycle: Lifecycle, memory: IncidentMemory, notifier: Notifier) -> None:
        self.lifecycle = lifecycle
        self.memory = memory
        self.notifier = notifier

    async def resolve(
        self,
        incident_id: int,
        reason: str,
        *,
        resolved_by: str,
        resolution: str,
        skill: str = "",
        tell: str | None = None,
        **details: Any,
    ) -> Incident:
        """Resolve the incident and remember what did it. ``tell``: the text for the human
        (default: they are told ``reason`` only if they were asked about this incident)."""
        reached("incident.resolving")
        done = self.lifecycle.move(
            incident_id, IncidentState.resolved, reason, resolved_by=resolved_by, **details
        )
        spans.mark("resolved", done.target)
        logger.info("incident #{} resolved: {}", incident_id, reason)
        await self.remember(done, resolution, skill)
        self.lifecycle.release(incident_id)
        if tell is not None:
            await self.tell(done, IncidentState.resolved, tell)
        elif done.details.get("asked"):
            spawn(self.tell(done, IncidentState.resolved, reason))
        return done

    async def remember(self, done: Incident, resolution: str, skill: str = "") -> None:
        """Store what resolved ``done`` in semantic memory (off the event loop; never raises)."""
        try:
            await asyncio.to_thread(self.memory.remember, done, resolution=resolution, skill=skill)
        except Exception as exc:
            logger.warning("could not store incident #{} in semantic memory: {}", done.id, exc)

    async def tell(self, inc: Incident, state: IncidentState, text: str) -> None:
        """Update the human's message about the incident (never raises)."""
        assert inc.id is not None
        try:
            await self.notifier.update(IncidentUpdate(inc.id, inc.title, state, text))
        except Exception as exc:
            logger.error("could not tell a human about incident #{}: {}", inc.id, exc)
