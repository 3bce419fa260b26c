"""``PagerNotifier``: the Notifier that pages the notifiers an incident's route names.

When a question is asked about an incident whose route has ``notify:`` targets, a ``trigger``
is queued to each (key ``route:<id>:<reopen count>``: asking again about the same incident
pages nobody twice; a reopened incident pages again). Resolutions are queued by the page worker
(``PageWorker.resolve_finished``), whatever resolved (or muted) the incident. Updates and plain
text page nobody.
"""

from __future__ import annotations

import asyncio

from loguru import logger

from guard.notify.base import HumanRequest, IncidentUpdate
from guard.notify.pagers import enqueue_pages
from guard.notify.routing import Router
from guard.store.db import Database
from guard.store.models import Incident


class PagerNotifier:
    def __init__(self, db: Database, router: Router) -> None:
        self.db = db
        self.router = router

    def trigger(self, incident_id: int) -> list[int]:
        """Queue the route's triggers for an incident; the new page ids."""
        with self.db.session() as session:
            inc = session.get(Incident, incident_id)
            if inc is None:
                return []
            targets = self.router.route(inc).targets
            key = f"route:{incident_id}:{inc.reopen_count}"
            return enqueue_pages(session, targets, inc, "trigger", key=key, reason="route")

    async def ask(self, request: HumanRequest) -> None:
        ids = await asyncio.to_thread(self.trigger, request.incident_id)
        if ids:
            logger.info("incident #{}: {} page(s) queued", request.incident_id, len(ids))

    async def update(self, update: IncidentUpdate) -> None:
        """Nothing: the page worker resolves pages when their incident is resolved."""

    async def send_text(self, text: str) -> None:
        """Nothing: pagers get incidents, not chat."""

    async def flush(self) -> None:
        """Nothing waits here: pages are in the outbox."""
