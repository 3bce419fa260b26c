"""Recall: the skills whose triggers match an incident, ranked with what resolved similar
incidents before (semantic memory is advice: when it is down, recall goes on without it)."""

from __future__ import annotations

import asyncio

from loguru import logger

from guard.agent import policy
from guard.harness import spans
from guard.memory import IncidentMemory
from guard.memory.semantic import summary
from guard.skills.library import Candidate, SkillLibrary
from guard.store.models import Incident


class Recaller:
    def __init__(self, library: SkillLibrary, memory: IncidentMemory) -> None:
        self.library = library
        self.memory = memory

    async def similar(self, inc: Incident) -> list[policy.Similar]:
        """Past incidents similar to ``inc`` (none when memory is unavailable)."""
        try:  # in a thread: the memory helper may be starting (a second) or stuck
            found = await asyncio.to_thread(self.memory.search, summary(inc), 5)
        except Exception as exc:  # memory is advice, never a reason to stop
            logger.warning("semantic memory unavailable: {}", exc)
            return []
        return policy.similar_only(
            [policy.Similar(r.incident_id, r.score, r.skill, r.resolution) for r in found], inc.id
        )

    async def recall(self, inc: Incident) -> tuple[list[Candidate], list[policy.Similar]]:
        """The ranked candidates, and the similar incidents that ranked them."""
        await asyncio.to_thread(self.library.refresh)  # e.g. after `guard skills sync`
        # In a thread: a trigger's regex may need the (budgeted) Python worker.
        candidates = await asyncio.to_thread(self.library.candidates, inc)
        similar = await self.similar(inc)
        spans.mark("recall.done", inc.target)
        return policy.rank(candidates, similar), similar
