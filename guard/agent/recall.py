"""Recall: the skills whose triggers match an incident, ranked with what resolved similar
incidents before (semantic memory is advice: when it is down, recall goes on without it).

When a trusted skill matches, its advice is waited for only ``ADVICE_WAIT`` seconds: the memory
helper may be starting (seconds of CPU: its first use, or its first after ``memory.idle_timeout``
passed), and a skill that heals unasked must not wait for it. The search goes on in the
background, so the helper is warm for the next incident."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from loguru import logger

from guard.agent import policy
from guard.harness import spans
from guard.memory import IncidentMemory
from guard.memory.semantic import summary
from guard.skills.library import Candidate, SkillLibrary
from guard.store.models import Incident

ADVICE_WAIT = 1.0  # seconds a trusted skill waits for semantic memory's advice


@dataclass(frozen=True)
class Recalled:
    """What recall found for one incident."""

    candidates: list[Candidate]  # the matching skills, best first
    similar: list[policy.Similar]  # the past incidents that ranked them
    memory_note: str = ""  # why memory gave no advice this time ("" when it was asked)


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

    async def recall(self, inc: Incident) -> Recalled:
        """The ranked candidates, and the similar incidents that ranked them."""
        await asyncio.to_thread(self.library.refresh)  # e.g. after `guard skills sync`
        searching = asyncio.ensure_future(self.similar(inc))  # beside the triggers' matching
        # In a thread: a trigger's regex may need the (budgeted) Python worker.
        candidates = await asyncio.to_thread(self.library.candidates, inc)
        note = ""
        if any(c.skill.runs_unasked for c in candidates):
            try:
                similar = await asyncio.wait_for(asyncio.shield(searching), ADVICE_WAIT)
            except TimeoutError:
                similar = []
                note = f"semantic memory not ready within {ADVICE_WAIT:g}s: ranked by triggers"
                logger.info("incident #{}: {}", inc.id, note)
        else:  # a person will be asked: the advice is worth its wait
            similar = await searching
        spans.mark("recall.done", inc.target)
        return Recalled(policy.rank(candidates, similar), similar, note)
