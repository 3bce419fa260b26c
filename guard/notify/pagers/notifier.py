"""``PagerNotifier``: the Notifier that pages the notifiers an incident's route names.

When a question is asked about an incident whose route has ``notify:`` targets, a ``trigger``
is queued to each (key ``route:<id>:<reopen count>``: asking again about the same incident
pages nobody twice; a reopened incident pages again). The route is the incident's with its
related signals' (``Router.route``): when a signal joins an incident whose question is out
(``joined``), its routes are triggered too, under the same key, so a target already paged in
this episode is not paged again. Resolutions are queued by the page worker
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
from guard.store.models import Incident, IncidentState
from guard.triage.correlation import related_of

ASKED = (IncidentState.awaiting_human, IncidentState.escalated)  # its question is out


class PagerNotifier:
    def __init__(self, db: Database, router: Router) -> None:
        self.db = db
        self.router = router

    def trigger(self, incident_id: int, *, asked_only: bool = False) -> list[int]:
        """Queue the route's triggers for an incident (``asked_only``: if its question is
        out); the new page ids."""
        with self.db.session() as session:
            inc = session.get(Incident, incident_id)
            if inc is None or (asked_only and inc.state not in ASKED):
                return []
            targets = self.router.route(inc, related_of(session, incident_id)).targets
            key = f"route:{incident_id}:{inc.reopen_count}"
            return enqueue_pages(session, targets, inc, "trigger", key=key, reason="route")

    async def ask(self, request: HumanRequest) -> None:
        ids = await asyncio.to_thread(self.trigger, request.incident_id)
        if ids:
            logger.info("incident #{}: {} page(s) queued", request.incident_id, len(ids))

    async def joined(self, incident_id: int) -> None:
        """A signal joined the incident: page the routes it adds, if the question is out
        (one still to be asked is routed with it then)."""
        ids = await asyncio.to_thread(self.trigger, incident_id, asked_only=True)
        if ids:
            logger.info(
                "incident #{}: {} page(s) queued for a signal that joined it", incident_id, len(ids)
            )

    async def update(self, update: IncidentUpdate) -> None:
        """Nothing: the page worker resolves pages when their incident is resolved."""

    async def send_text(self, text: str) -> None:
        """Nothing: pagers get incidents, not chat."""

    async def flush(self) -> None:
        """Nothing waits here: pages are in the outbox."""
