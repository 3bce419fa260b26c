"""Escalation: steps that page further, and reminders, while a question waits for a human.

The leader's periodic job (``Escalator.tick``, scheduled by ``guard.app.selfhealth``) looks at
every incident waiting for a human (``awaiting_human`` or ``escalated``) that nobody has
acknowledged (``guard.incidents.ack``). Counting from when its question was asked (the latest
``asked_human`` entry of its timeline, or when quiet hours released it):

- step ``i`` of ``escalation.steps`` fires once ``after`` has elapsed: its pages are queued
  (``enqueue_pages(session, step.notify, inc, "trigger", key="escalation:<id>:<i>")``) in the
  transaction that records it fired (``escalation_fired``, unique per incident, episode and
  step: a reopened incident escalates anew, its keys end in ``:<reopen count>``), so a crash
  neither loses a step (it is not recorded, and fires on the next tick) nor repeats one;
- every ``remind_every``, a short reminder is queued as a reply in the question's thread, in
  every chat where the question was posted, recorded the same way (reminder ``n`` once).

An incident below ``quiet_hours.below`` is neither reminded nor escalated inside quiet hours: it
resumes at the window's end. Acknowledging (``acknowledge``) stops both, and queues
``acknowledge`` to every pager that got a ``trigger`` for the incident.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from loguru import logger
from sqlmodel import Session, col, select

from guard import cluster
from guard.config import Settings
from guard.domain.durations import format_duration
from guard.domain.records import Severity, utcnow
from guard.harness.crashpoints import reached
from guard.incidents.ack import Acked, ack_of
from guard.incidents.ack import acknowledge as record_ack
from guard.incidents.gate import Actor, Gate
from guard.incidents.lifecycle import record
from guard.notify.outbox import queue
from guard.store.db import Database
from guard.store.escalation import EscalationFired, QuietHeld
from guard.store.models import Incident, IncidentState, IncidentTimeline, OutboxMessage

Clock = Callable[[], datetime]
WAITING = (IncidentState.awaiting_human, IncidentState.escalated)


class Pages(Protocol):
    """The page outbox (``guard.notify.pagers``): what escalation and acks queue pages with."""

    def enqueue_pages(
        self,
        session: Session,
        targets: Sequence[str],
        incident: Incident,
        action: Any,
        *,
        key: str,
        reason: str = "",
    ) -> list[int]: ...

    def triggered_targets(self, session: Session, incident_id: int) -> list[str]: ...


def page_outbox() -> Pages:
    """The page outbox module (imported here only: it is built beside this one)."""
    from guard.notify import pagers

    return pagers


@dataclass(frozen=True)
class Fired:
    incident_id: int
    kind: str  # "step" or "reminder"
    number: int


def below_threshold(settings: Settings, severity: str) -> bool:
    """Whether quiet hours hold an incident of ``severity``."""
    quiet = settings.quiet_hours
    if quiet is None:
        return False
    try:
        return Severity(severity).rank < Severity(quiet.below).rank
    except ValueError:
        return True  # an unknown severity is not known to be urgent


def asked_at(session: Session, incident_id: int) -> datetime | None:
    """When the incident's current question reached people: the latest ``asked_human`` entry,
    or the release of a question quiet hours held after it; None while one is held."""
    asked = session.exec(
        select(IncidentTimeline.at)
        .where(IncidentTimeline.incident_id == incident_id, IncidentTimeline.type == "asked_human")
        .order_by(col(IncidentTimeline.id).desc())
    ).first()
    held = session.exec(
        select(QuietHeld).where(QuietHeld.incident_id == incident_id).order_by(col(QuietHeld.id))
    ).all()
    if any(h.released_at is None for h in held):
        return None
    released = [h.released_at for h in held if h.released_at and h.outcome.startswith("asked")]
    return max([a for a in (asked, *released) if a is not None], default=None)


def question_chats(session: Session, incident_id: int) -> list[tuple[str, str]]:
    """Every (channel, chat) where the incident's question was posted (or is queued)."""
    rows = session.exec(
        select(OutboxMessage.channel, OutboxMessage.chat_id)
        .where(
            OutboxMessage.incident_id == incident_id,
            OutboxMessage.role == "incident",
            OutboxMessage.method == "send",
        )
        .distinct()
    ).all()
    return sorted((str(c), str(chat)) for c, chat in rows)


def reminder_text(incident: Incident, waited: float) -> str:
    """Reminder ``n``'s text; ``waited``: ``n`` times ``remind_every`` (each one's own text)."""
    return (
        f"Reminder: incident #{incident.id} ({incident.severity}) has waited "
        f"{format_duration(waited)} for an answer. Answer it, or acknowledge it "
        f"(guard ack {incident.id}) to stop the reminders and the escalation."
    )


class Escalator:
    """The leader's escalation job (see the module's docstring); ``clock`` is injectable."""

    def __init__(
        self,
        settings: Settings,
        db: Database,
        *,
        clock: Clock = utcnow,
        pages: Pages | None = None,
    ) -> None:
        self.settings = settings
        self.db = db
        self.clock = clock
        self._pages = pages

    @property
    def pages(self) -> Pages:
        if self._pages is None:
            self._pages = page_outbox()
        return self._pages

    async def run(self) -> None:
        """One tick, off the event loop (the scheduler's job); a failure is logged, and what
        it did not record fires on the next tick."""
        try:
            fired = await asyncio.to_thread(self.tick)
        except Exception:
            logger.exception("escalation: the tick failed; it is tried again")
            return
        for f in fired:
            logger.info("incident #{}: escalation {} {} fired", f.incident_id, f.kind, f.number)

    def tick(self) -> list[Fired]:
        """Fire every step and reminder that is due now; return what fired."""
        esc = self.settings.escalation
        if not esc.active:
            return []
        now = self.clock()
        quiet = self.settings.quiet_hours
        in_quiet = quiet is not None and quiet.window_end(now) is not None
        with self.db.session() as session:
            waiting = session.exec(
                select(Incident).where(col(Incident.state).in_(WAITING)).order_by(col(Incident.id))
            ).all()
            due: list[tuple[int, float]] = []
            for inc in waiting:
                assert inc.id is not None
                if ack_of(session, inc) or (
                    in_quiet and below_threshold(self.settings, inc.severity)
                ):
                    continue
                at = asked_at(session, inc.id)
                if at is not None:
                    due.append((inc.id, (now - at).total_seconds()))
        fired: list[Fired] = []
        for incident_id, waited in due:
            for i, step in enumerate(esc.steps):
                if waited >= step.after and self._fire_step(incident_id, i, now):
                    fired.append(Fired(incident_id, "step", i))
            n = int(waited // esc.remind_every) if esc.remind_every > 0 else 0
            if n >= 1 and self._remind(incident_id, n, now):
                fired.append(Fired(incident_id, "reminder", n))
        return fired

    def _fire_step(self, incident_id: int, i: int, now: datetime) -> bool:
        """Fire step ``i`` unless it fired before (or the incident stopped waiting)."""
        step = self.settings.escalation.steps[i]
        with self.db.session() as session:
            inc = _still_waiting(session, incident_id)
            if inc is None or not _mark(session, inc, "step", i, now, notify=step.notify):
                return False
            cluster.current().claim(session, "escalation.step", f"{incident_id}:{i}")
            self.pages.enqueue_pages(
                session,
                step.notify,
                inc,
                "trigger",
                key=step_key(inc, i),
                reason=f"escalation step {i + 1}",
            )
            record(
                session,
                inc,
                "escalation_step",
                f"escalation step {i + 1}: paged {', '.join(step.notify)} "
                f"(nobody answered within {format_duration(step.after)})",
                actor="guard",
                step=i,
                notify=step.notify,
            )
            reached("escalation.step_recorded")
        reached("escalation.step_committed")
        return True

    def _remind(self, incident_id: int, n: int, now: datetime) -> bool:
        """Queue reminder ``n`` in every chat of the question, unless it was queued before."""
        with self.db.session() as session:
            inc = _still_waiting(session, incident_id)
            if inc is None or not _mark(session, inc, "reminder", n, now):
                return False
            text = reminder_text(inc, n * self.settings.escalation.remind_every)
            queued = reply_in_threads(session, incident_id, text)
            record(
                session, inc, "reminded", f"reminder {n} in {len(queued)} chat(s)", actor="guard"
            )
            reached("escalation.reminder_recorded")
        for row, outbox_id in queued:
            queue.remember(self.db, row, outbox_id)
        return True


def _still_waiting(session: Session, incident_id: int) -> Incident | None:
    inc = session.get(Incident, incident_id)
    if inc is None or inc.state not in WAITING:
        return None
    return inc if ack_of(session, inc) is None else None


def step_key(inc: Incident, i: int) -> str:
    """The page key of step ``i``: ``escalation:<id>:<i>``, and ``:<episode>`` after a reopen."""
    return f"escalation:{inc.id}:{i}" + (f":{inc.reopen_count}" if inc.reopen_count else "")


def _mark(
    session: Session, inc: Incident, kind: str, number: int, now: datetime, **data: Any
) -> bool:
    """Record that ``kind`` ``number`` fired in the incident's episode; False if it had."""
    fired = session.exec(
        select(EscalationFired.id).where(
            EscalationFired.incident_id == inc.id,
            EscalationFired.episode == inc.reopen_count,
            EscalationFired.kind == kind,
            EscalationFired.number == number,
        )
    ).first()
    if fired is not None:
        return False
    assert inc.id is not None
    session.add(
        EscalationFired(
            incident_id=inc.id,
            episode=inc.reopen_count,
            kind=kind,
            number=number,
            at=now,
            data=data,
        )
    )
    return True


def reply_in_threads(
    session: Session, incident_id: int, text: str
) -> list[tuple[OutboxMessage, int]]:
    """Queue ``text`` as a reply to the incident's question in every chat it was asked in, in
    the caller's transaction; ``queue.remember`` the rows after the commit."""
    queued: list[tuple[OutboxMessage, int]] = []
    for channel, chat in question_chats(session, incident_id):
        row = OutboxMessage(
            method="send",
            chat_id=chat,
            text=text,
            role="reply",
            incident_id=incident_id,
            reply_to_incident=True,
        )
        queued.append((row, queue.add(session, row, channel)))
    return queued


def acknowledge(
    db: Database,
    incident_id: int,
    actor: Actor,
    gate: Gate,
    *,
    pages: Pages | None = None,
    also: Callable[[Session], object] | None = None,
    now: datetime | None = None,
) -> Acked:
    """Acknowledge the incident (``guard.incidents.ack``) and, in the same transaction, queue
    ``acknowledge`` to every pager it triggered and a line in the question's thread in every
    chat it was asked in (the escalation job stops at once: it skips acknowledged incidents).
    ``also`` runs first in that transaction (a chat gateway spends the button's approval)."""
    queued: list[tuple[OutboxMessage, int]] = []

    def tell(session: Session, incident: Incident) -> None:
        if also is not None:
            also(session)
        assert incident.id is not None
        text = f"Acknowledged by {actor.name}: escalation and reminders stop."
        queued.extend(reply_in_threads(session, incident.id, text))
        outbox = pages or page_outbox()
        targets = outbox.triggered_targets(session, incident.id)
        if targets:
            outbox.enqueue_pages(
                session,
                targets,
                incident,
                "acknowledge",
                key=f"ack:{incident.id}:{incident.reopen_count}",
                reason="ack",
            )

    acked = record_ack(db, incident_id, actor, gate, also=tell, now=now)
    for row, outbox_id in queued:
        queue.remember(db, row, outbox_id)
    return acked
