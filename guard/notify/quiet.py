"""Quiet hours: a question about an incident below ``quiet_hours.below`` that arrives inside the
window waits for its end; only asking waits (a known remedy still runs: the agent is untouched).

``QuietNotifier`` wraps the Notifier the agent asks through. Its ``ask``, inside the window and
for an incident below the threshold (its severity as stored now, or as asked, whichever is
worse), stores the request (``quiet_held``) and returns; the question's buttons are kept alive
until the window's end plus ``agent.approval_ttl``. ``release`` (the leader's periodic job, see
``guard.app.selfhealth``) asks each held question once its window is over, or at once when the
incident became severe enough (triage raises an incident's severity as worse signals arrive),
and drops it if the incident stopped waiting for a human (healed, muted) meanwhile. A release
whose ask was queued before a crash is not asked twice: the outbox already holds an ask row
for the incident newer than the hold.

``update`` passes through, except for an incident whose question is still held: nobody was
asked, so nobody is told, and the hold ends. ``joined`` (a signal joined the incident) passes
through unless the question is still held: its release asks, routed with that signal then.
``send_text`` and ``flush`` pass through.
"""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import datetime, timedelta
from typing import Any

from loguru import logger
from sqlalchemy import func, update
from sqlmodel import Session, col, select

from guard.config import Settings
from guard.domain.records import utcnow
from guard.harness.crashpoints import reached
from guard.incidents.lifecycle import record
from guard.notify.base import HumanRequest, IncidentUpdate, Notifier, SkillOption, joined
from guard.notify.escalation import WAITING, Clock, below_threshold
from guard.store.db import Database
from guard.store.escalation import QuietHeld
from guard.store.models import Approval, Incident, OutboxMessage


def wrap_quiet(notifier: Notifier, settings: Settings, db: Database) -> QuietNotifier | None:
    """``notifier`` behind quiet hours, or None when none are configured. Whoever builds it
    (``guard.app.wiring``) hands it to the agent as its notifier and to ``release_held``."""
    if settings.quiet_hours is None:
        return None
    return QuietNotifier(notifier, settings, db)


async def release_held(quiet: QuietNotifier | None) -> list[int]:
    """The periodic job: release what ``quiet`` holds (nothing without it); a failure is
    logged, and the held questions are tried again on the next run."""
    try:
        return await quiet.release() if quiet is not None else []
    except Exception:
        logger.exception("quiet hours: releasing held questions failed; tried again")
        return []


def _request_data(request: HumanRequest) -> dict[str, Any]:
    return dataclasses.asdict(request)


def _request(data: dict[str, Any]) -> HumanRequest:
    names = {f.name for f in dataclasses.fields(HumanRequest)}
    kept = {k: v for k, v in data.items() if k in names}
    kept["options"] = [SkillOption(**o) for o in kept.get("options") or []]
    return HumanRequest(**kept)


def _approvals(request: HumanRequest) -> list[str]:
    ids = [o.approval_id for o in request.options]
    ids += [request.deny_id, request.mute_id, request.ack_id]
    return [i for i in ids if i]


class QuietNotifier:
    """A Notifier that holds questions in quiet hours (see the module's docstring)."""

    def __init__(
        self, inner: Notifier, settings: Settings, db: Database, clock: Clock = utcnow
    ) -> None:
        self.inner = inner
        self.settings = settings
        self.db = db
        self.clock = clock

    def _quiet_enough(self, session: Session, request: HumanRequest) -> bool:
        """Whether the incident is below the threshold, as asked and as stored now."""
        inc = session.get(Incident, request.incident_id)
        return below_threshold(self.settings, request.severity) and (
            inc is None or below_threshold(self.settings, inc.severity)
        )

    async def ask(self, request: HumanRequest) -> None:
        quiet = self.settings.quiet_hours
        now = self.clock()
        end = quiet.window_end(now) if quiet is not None else None
        if end is not None and await asyncio.to_thread(self._hold, request, now, end):
            logger.info(
                "incident #{}: question held by quiet hours until {}", request.incident_id, end
            )
            return
        await self.inner.ask(request)

    def _hold(self, request: HumanRequest, now: datetime, end: datetime) -> bool:
        """Store ``request`` until ``end`` unless the incident is at the threshold or above."""
        with self.db.session() as session:
            if not self._quiet_enough(session, request):
                return False
            session.execute(  # a newer question about the incident replaces a held one
                update(QuietHeld)
                .where(
                    col(QuietHeld.incident_id) == request.incident_id,
                    col(QuietHeld.released_at).is_(None),
                )
                .values(released_at=now, outcome="superseded")
            )
            floor = session.exec(select(func.max(OutboxMessage.id))).one()
            session.add(
                QuietHeld(
                    incident_id=request.incident_id,
                    request=_request_data(request),
                    held_at=now,
                    until=end,
                    outbox_floor=floor or 0,
                )
            )
            keep = end + timedelta(seconds=self.settings.agent.approval_ttl)
            session.execute(
                update(Approval)
                .where(col(Approval.id).in_(_approvals(request)), col(Approval.used_at).is_(None))
                .values(expires_at=keep)
            )
            inc = session.get(Incident, request.incident_id)
            if inc is not None:
                record(
                    session,
                    inc,
                    "question_held",
                    f"quiet hours: the question waits until {end.isoformat(timespec='minutes')}",
                    actor="guard",
                    until=end.isoformat(),
                )
        return True

    async def update(self, update: IncidentUpdate) -> None:
        if await asyncio.to_thread(self._end_hold, update.incident_id, f"dropped: {update.state}"):
            return
        await self.inner.update(update)

    async def joined(self, incident_id: int) -> None:
        if not await asyncio.to_thread(self._holds, incident_id):
            await joined(self.inner, incident_id)

    def _holds(self, incident_id: int) -> bool:
        with self.db.session() as session:
            return (
                session.exec(
                    select(QuietHeld.id).where(
                        col(QuietHeld.incident_id) == incident_id,
                        col(QuietHeld.released_at).is_(None),
                    )
                ).first()
                is not None
            )

    async def send_text(self, text: str) -> None:
        await self.inner.send_text(text)

    async def flush(self) -> None:
        await self.inner.flush()

    def _end_hold(self, incident_id: int, outcome: str) -> bool:
        with self.db.session() as session:
            held = session.execute(
                update(QuietHeld)
                .where(
                    col(QuietHeld.incident_id) == incident_id,
                    col(QuietHeld.released_at).is_(None),
                )
                .values(released_at=self.clock(), outcome=outcome)
            )
        return bool(getattr(held, "rowcount", 0))

    def held(self) -> list[QuietHeld]:
        """The questions held now, oldest first."""
        with self.db.session() as session:
            return list(
                session.exec(
                    select(QuietHeld)
                    .where(col(QuietHeld.released_at).is_(None))
                    .order_by(col(QuietHeld.id))
                ).all()
            )

    async def release(self) -> list[int]:
        """Ask every held question that may be asked now; return their incidents' ids."""
        released: list[int] = []
        for held in await asyncio.to_thread(self.held):
            now = self.clock()
            inc, asked = await asyncio.to_thread(self._look, held)
            if inc is None or inc.state not in WAITING:
                why = f"dropped: {inc.state if inc else 'gone'}"
                await asyncio.to_thread(self._settle, held, now, why)
                continue
            if now < held.until and below_threshold(self.settings, inc.severity):
                continue
            why = "the window's end" if now >= held.until else f"now {inc.severity}"
            if not asked:
                request = dataclasses.replace(
                    _request(held.request), severity=inc.severity, count=inc.count
                )
                await self.inner.ask(request)
                reached("quiet.asked_not_marked")
            await asyncio.to_thread(self._settle, held, now, f"asked at {why}")
            released.append(held.incident_id)
        return released

    def _look(self, held: QuietHeld) -> tuple[Incident | None, bool]:
        """The held question's incident, and whether an ask newer than the hold is queued (a
        release that asked, then died before it settled the hold)."""
        with self.db.session() as session:
            inc = session.get(Incident, held.incident_id)
            asked = session.exec(
                select(OutboxMessage.id).where(
                    OutboxMessage.incident_id == held.incident_id,
                    OutboxMessage.role == "incident",
                    OutboxMessage.method == "send",
                    col(OutboxMessage.id) > held.outbox_floor,
                )
            ).first()
        return inc, asked is not None

    def _settle(self, held: QuietHeld, now: datetime, outcome: str) -> None:
        with self.db.session() as session:
            row = session.get(QuietHeld, held.id)
            if row is None or row.released_at is not None:
                return
            row.released_at, row.outcome = now, outcome
            session.add(row)
            inc = session.get(Incident, held.incident_id)
            if inc is not None:
                record(session, inc, "question_released", f"quiet hours: {outcome}", actor="guard")
        logger.info("incident #{}: held question {}", held.incident_id, outcome)
