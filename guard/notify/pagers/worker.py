"""The page worker inside ``guard run`` (the leader only): delivers the page outbox.

Each pass takes, for every target, its oldest pending row (so a target's pages keep their
order: a resolve never overtakes its trigger), and sends the due ones, targets side by side (one
slow or failing webhook never holds up PagerDuty). Before each call the send is claimed with
the leader's fencing token (``cluster.current().claim``): a deposed replica sends nothing.

- accepted: the row is ``sent``;
- 429, 408, 5xx, a network error or a timeout: tried again after an exponential backoff
  (``BACKOFF_FIRST`` doubling to ``BACKOFF_MAX``, or the ``Retry-After`` asked for if longer);
- any other 4xx (PagerDuty's 400 "invalid event"): ``failed`` for good, logged as an error
  and audited (``page.refused``);
- still failing ``give_up_after`` (the notifier's; a day by default) after it was queued:
  ``failed``, logged as an error and audited (``page.gave_up``);
- a target no longer configured: ``failed``, logged and audited (``page.dropped``).

A crash between the call and marking the row leaves it pending, so it is sent again after the
restart: nothing is lost, and the receiver acts once (PagerDuty's ``dedup_key``, the webhook's
``X-Guard-Delivery``). The worker also queues the ``resolve`` of every open page whose incident
is over (``resolve_finished``): resolved however it was (healed, auto-resolved, by hand), or
muted (a person silenced it: nobody should stay paged).
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta

import httpx
from loguru import logger
from sqlalchemy import func
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import aliased
from sqlmodel import col, select

from guard import cluster
from guard.config import Settings
from guard.config.paging import PagerDutyNotifier, WebhookNotifier
from guard.domain.durations import format_duration
from guard.domain.exceptions import NotLeader
from guard.domain.records import IncidentState, utcnow
from guard.harness.crashpoints import reached
from guard.notify.channel import Rejected, Retry, Unreachable
from guard.notify.pagers import enqueue_pages, pagerduty, triggered_targets, webhook
from guard.redact import redact_value
from guard.store import audit
from guard.store.db import Database
from guard.store.models import Incident
from guard.store.paging import PageOutbox, PageStatus
from guard.telemetry import metrics

IDLE = 0.5  # seconds between passes when nothing is due
SWEEP_EVERY = 2.0  # seconds between looks for resolved incidents with open pages
BACKOFF_FIRST = 1.0
BACKOFF_MAX = 300.0
DRAIN_FOR = 30.0  # seconds ``guard run --once`` spends delivering pages at most
OVER = (IncidentState.resolved.value, IncidentState.muted.value)  # their open pages are resolved


def backoff(attempts: int, first: float = BACKOFF_FIRST) -> float:
    """Seconds to wait after the ``attempts``-th failed attempt (1, 2, 4, ... up to the cap)."""
    return float(min(first * 2 ** max(attempts - 1, 0), BACKOFF_MAX))


class PageWorker:
    """Sends pending pages until ``stop`` is set."""

    def __init__(self, settings: Settings, db: Database, *, first_backoff: float = BACKOFF_FIRST):
        self.settings = settings
        self.db = db
        self.first_backoff = first_backoff
        self._swept_at = -float("inf")

    async def run(self, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        async with httpx.AsyncClient() as client:
            while not stop.is_set():
                try:
                    if loop.time() - self._swept_at >= SWEEP_EVERY:
                        self._swept_at = loop.time()
                        await asyncio.to_thread(self.resolve_finished)
                    due = await self.deliver_due(client)
                except NotLeader as exc:  # deposed: the new leader sends what is left
                    logger.warning("page worker stops: {}", exc)
                    return
                except SQLAlchemyError as exc:  # the store is away: wait, never die
                    why = getattr(exc, "orig", None) or type(exc).__name__
                    logger.warning("page worker: the store failed ({}); retrying in 5s", why)
                    await _sleep(stop, 5.0)
                    continue
                if not due:
                    await _sleep(stop, IDLE)

    async def drain(self, within: float = DRAIN_FOR) -> int:
        """One bounded delivery of the outbox, for ``guard run --once``: queue the resolves of
        finished incidents, then deliver pass after pass until nothing is due (a page waiting
        out its backoff is left for the next run) or ``within`` seconds are up. Every send is
        claimed like the worker's. Returns how many attempts were made; never raises for a
        pager, the store or a lost lease (what is left stays in the outbox)."""
        tried = 0
        async with httpx.AsyncClient() as client:
            try:
                async with asyncio.timeout(within):
                    await asyncio.to_thread(self.resolve_finished)
                    while due := await self.deliver_due(client):
                        tried += len(due)
            except TimeoutError:
                logger.warning("pages: {:g}s were up; the rest waits for the next run", within)
            except (NotLeader, SQLAlchemyError) as exc:
                logger.warning("pages not delivered ({}); they wait in the outbox", exc)
        return tried

    async def deliver_due(self, client: httpx.AsyncClient) -> list[PageOutbox]:
        """One pass: each target's due row, targets side by side; the rows attempted."""
        due = await asyncio.to_thread(self.due)
        await asyncio.gather(*(self.deliver(client, row) for row in due))
        return due

    def due(self) -> list[PageOutbox]:
        """Each target's oldest pending row, if its backoff is over."""
        now = utcnow()
        with self.db.session() as session:
            rows = session.exec(
                select(PageOutbox)
                .where(PageOutbox.status == PageStatus.pending.value)
                .order_by(col(PageOutbox.id))
            ).all()
        first: dict[str, PageOutbox] = {}
        for row in rows:
            first.setdefault(row.target, row)
        return [r for r in first.values() if r.next_at is None or r.next_at <= now]

    async def deliver(self, client: httpx.AsyncClient, row: PageOutbox) -> None:
        """One attempt at one row; marks it sent, failed, or pending with its next attempt.
        Raises ``NotLeader`` if this replica may no longer send."""
        config = self.settings.notifiers.get(row.target)
        if config is None:
            logger.error(
                "page {} ({} for incident #{}) names {}, which is not configured under "
                "notifiers: it is dropped",
                row.id,
                row.action,
                row.incident_id,
                row.target,
            )
            await asyncio.to_thread(
                self._mark,
                row,
                PageStatus.failed,
                "notifier not configured",
                audited="page.dropped",
            )
            return
        await asyncio.to_thread(self._claim, row)
        reached("page.claimed")
        row.payload = redact_value(row.payload)  # stored redacted already; an exit checks again
        if url := self.settings.incident_url(row.incident_id):  # as configured when it is sent
            row.payload = {**row.payload, "url": url}
        try:
            if isinstance(config, PagerDutyNotifier):
                await pagerduty.send(client, row, config)
            else:
                assert isinstance(config, WebhookNotifier)
                await webhook.send(client, row, row.target, config)
        except Rejected as exc:
            logger.error(
                "{} refused page {} ({} for incident #{}) for good: {}",
                row.target,
                row.id,
                row.action,
                row.incident_id,
                exc,
            )
            await asyncio.to_thread(
                self._mark, row, PageStatus.failed, str(exc), audited="page.refused"
            )
            return
        except Exception as exc:  # 429/5xx/network, or anything unforeseen: later, never dead
            if (waited := self._waited(row)) >= config.give_up_after:
                await asyncio.to_thread(self._give_up, row, waited, exc)
                return
            wait = backoff(row.attempts + 1, self.first_backoff)
            if isinstance(exc, Retry):
                wait = max(wait, exc.after)
            elif not isinstance(exc, Unreachable):
                logger.opt(exception=exc).error("page {}: unexpected failure", row.id)
            logger.warning(
                "page {} to {} ({} for incident #{}) not delivered ({}); retrying in {:g}s",
                row.id,
                row.target,
                row.action,
                row.incident_id,
                exc,
                wait,
            )
            await asyncio.to_thread(self._mark, row, PageStatus.pending, str(exc), wait)
            return
        reached("page.sent_before_mark")
        await asyncio.to_thread(self._mark, row, PageStatus.sent)
        logger.info(
            "page {}: {} for incident #{} delivered to {}",
            row.id,
            row.action,
            row.incident_id,
            row.target,
        )

    @staticmethod
    def _waited(row: PageOutbox) -> float:
        """Seconds since the row was queued."""
        return (utcnow() - row.created_at).total_seconds()

    def _give_up(self, row: PageOutbox, waited: float, exc: Exception) -> None:
        """Fail a page still not delivered ``give_up_after`` it was queued (logged, audited)."""
        why = f"gave up after {format_duration(waited)} and {row.attempts + 1} attempt(s): {exc}"
        logger.error(
            "page {} to {} ({} for incident #{}) {}",
            row.id,
            row.target,
            row.action,
            row.incident_id,
            why,
        )
        self._mark(row, PageStatus.failed, why, audited="page.gave_up")

    def _claim(self, row: PageOutbox) -> None:
        with self.db.session() as session:
            cluster.current().claim(session, "page.send", row.id)

    def _mark(
        self,
        row: PageOutbox,
        status: PageStatus,
        error: str = "",
        wait: float = 0,
        *,
        audited: str = "",
    ) -> None:
        """Record an attempt's outcome (and, with ``audited``, an audit entry of that action, in
        the same transaction)."""
        outcome = "retried" if status == PageStatus.pending else status.value
        metrics.record_page(row.target, row.action, outcome)
        with self.db.session() as session:
            fresh = session.get(PageOutbox, row.id)
            assert fresh is not None
            fresh.status, fresh.error, fresh.attempts = status.value, error, fresh.attempts + 1
            if status == PageStatus.sent:
                fresh.sent_at = utcnow()
            fresh.next_at = utcnow() + timedelta(seconds=wait) if wait else None
            session.add(fresh)
            if audited:
                audit.append(
                    session,
                    actor="guard",
                    action=audited,
                    subject=f"incident:{row.incident_id}",
                    data={
                        "page": row.id,
                        "target": row.target,
                        "action": row.action,
                        "attempts": fresh.attempts,
                        "error": error,
                    },
                )

    def resolve_finished(self) -> int:
        """Queue ``resolve`` to the open pages of every resolved or muted incident; how many
        incidents."""
        done = 0
        later = aliased(PageOutbox)
        resolved_since = (
            select(later.id)
            .where(
                later.incident_id == PageOutbox.incident_id,
                later.target == PageOutbox.target,
                later.action == "resolve",
                col(later.id) > col(PageOutbox.id),
            )
            .exists()
        )
        with self.db.session() as session:
            paged = set(
                session.exec(
                    select(PageOutbox.incident_id)
                    .join(Incident, col(Incident.id) == col(PageOutbox.incident_id))
                    .where(
                        PageOutbox.action == "trigger",
                        col(Incident.state).in_(OVER),
                        ~resolved_since,
                    )
                    .distinct()
                ).all()
            )
            for incident_id in sorted(paged):
                open_targets = triggered_targets(session, incident_id)
                inc = session.get(Incident, incident_id)
                if not open_targets or inc is None:
                    continue
                cluster.current().fence(session)
                # keyed by the newest trigger: a trigger queued after a resolve gets its own
                newest = session.exec(
                    select(func.max(PageOutbox.id)).where(
                        PageOutbox.incident_id == incident_id, PageOutbox.action == "trigger"
                    )
                ).one()
                key = f"resolve:{incident_id}:{newest}"
                why = "muted" if inc.state == IncidentState.muted else "resolved"
                if enqueue_pages(session, open_targets, inc, "resolve", key=key, reason=why):
                    done += 1
        return done


async def _sleep(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
