"""One worker (an asyncio task) per incident, so an incident is never handled twice at once.

Work for an incident that already has a busy worker is not started alongside it: a plain
"look at it" request is remembered and made once the worker is done (an incident that reopens
while its remedy is finishing is not dropped); a specific job (a human's command, a resumed run)
is refused, and its caller keeps it for later. While closing, nothing new starts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from loguru import logger

Job = Coroutine[Any, Any, None]


class IncidentWorkers:
    def __init__(self, look: Callable[[int], Job]) -> None:
        self._look = look  # what "look at this incident" runs
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._again: set[int] = set()
        self._closing = False

    def busy(self, incident_id: int) -> bool:
        task = self._tasks.get(incident_id)
        return task is not None and not task.done()

    def start(self, incident_id: int, job: Job | None = None) -> bool:
        """Run ``job`` (default: a look) for the incident; False if it did not start."""
        if self._closing or self.busy(incident_id):
            if job is not None:
                job.close()
            elif not self._closing:
                self._again.add(incident_id)
            return False
        task = asyncio.create_task(
            job if job is not None else self._look(incident_id), name=f"incident:{incident_id}"
        )
        self._tasks[incident_id] = task
        task.add_done_callback(lambda t: self._after(incident_id, t))
        return True

    def _after(self, incident_id: int, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and (exc := task.exception()) is not None:
            # the incident stays where it was; ``Agent.sweep`` takes an open one again
            logger.opt(exception=exc).error("incident #{}: its worker failed", incident_id)
        if incident_id in self._again and not self._closing:
            self._again.discard(incident_id)
            self.start(incident_id)  # the look does nothing if the incident needs no work

    def when_idle(self, incident_id: int, then: Callable[[], None]) -> None:
        """Call ``then`` once the incident's worker (if any) is done."""
        task = self._tasks.get(incident_id)
        if task is not None and not task.done():
            task.add_done_callback(lambda _t: then())
        else:
            then()

    async def drain(self) -> None:
        """Wait until no worker runs (workers may start others meanwhile)."""
        while any(not t.done() for t in self._tasks.values()):
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    async def close(self) -> None:
        """Cancel every worker and start none instead; afterwards workers may start again."""
        self._closing = True
        for task in self._tasks.values():
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)
        self._again.clear()
        self._closing = False

    def tasks(self) -> list[asyncio.Task[None]]:
        return list(self._tasks.values())
