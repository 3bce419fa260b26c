"""What the store holds, counted in one place: the daily report, the web overview and
``guard incidents list --summary`` all show these figures, so they cannot disagree.

Definitions (also in docs/SKILLS.md, "What the figures count"):

- awaiting a human (now): incidents in ``awaiting_human`` or ``escalated``;
- pending approvals (now): incidents awaiting a human whose question still has a live button
  (an unused, unexpired approval); the buttons a resolved or muted incident leaves behind are
  not pending, and one question counts once however many buttons it has;
- healed by a skill (window): resolved in the window by a skill's run that verified, whoever
  approved the run;
- healed by a human's fix (window): resolved in the window by a human's fix (a reply, or an
  approved proposal) that verified;
- recovered on their own (window): resolved in the window with no remedy: the check passed
  again, or went quiet, or a person ended it (`guard resolve`);
- learned skills (window): skills learned in the window (the timeline's ``learned`` entries),
  each skill once; the same lesson learned again is not a new skill.

"Resolved in the window" means resolved now, with ``resolved_at`` in the window: a reopened
incident counts when it is resolved again, by what resolved it that time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import Session, col, select

from guard.domain.records import utcnow
from guard.store.models import HUMAN_FIX, Approval, Incident, IncidentState, IncidentTimeline

AWAITING = (IncidentState.awaiting_human, IncidentState.escalated)
LEARNED = "learned"  # the timeline entry a learned skill writes (guard.agent.learning)
SKILL, HUMAN, RECOVERED = "skill", "human", "recovered"
DAY = timedelta(days=1)


@dataclass(frozen=True)
class Question:
    """An incident awaiting a human, with the skills its live buttons offer."""

    incident: int
    title: str
    skills: list[str]
    expires_at: datetime | None  # its last live button's expiry; None: every button expired


@dataclass
class Counts:
    start: datetime
    end: datetime
    awaiting: list[Question] = field(default_factory=list)
    healed_by_skill: int = 0
    healed_by_human: int = 0
    recovered: int = 0
    learned: list[dict[str, Any]] = field(default_factory=list)  # skill, incident, commit

    @property
    def pending(self) -> list[Question]:
        """The questions a human can still answer with a button."""
        return [q for q in self.awaiting if q.expires_at is not None]

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape (a contract: fields may be added, never renamed)."""
        return {
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "awaiting_human": len(self.awaiting),
            "pending_approvals": len(self.pending),
            "healed_by_skill": self.healed_by_skill,
            "healed_by_human": self.healed_by_human,
            "recovered": self.recovered,
            "learned_skills": len(self.learned),
            "awaiting": [q.incident for q in self.awaiting],
            "learned": self.learned,
        }


def healed_by(details: Mapping[str, Any]) -> str:
    """How a resolved incident was healed: ``skill``, ``human`` (a human's fix) or
    ``recovered`` (no remedy ran). ``healed_by`` is written by the agent when a run verified;
    incidents stored before it carry only ``resolved_by``. A person who ended one (``guard
    resolve``: ``resolved_by`` is an actor, ``kind:name``, never a skill's name) ran no remedy."""
    how = details.get("healed_by")
    if how in (SKILL, HUMAN):
        return str(how)
    by = details.get("resolved_by")
    if not by or ":" in str(by):
        return RECOVERED
    return HUMAN if by == HUMAN_FIX or by == details.get("learned_skill") else SKILL


def questions(session: Session, now: datetime) -> list[Question]:
    """Every incident awaiting a human, oldest first, with its live buttons' skills.

    Two queries, each one pass: the live buttons are joined to the waiting incidents in SQL
    (no list of ids bound as parameters, however many wait) and grouped by incident here."""
    waiting = session.exec(
        select(Incident.id, Incident.title)
        .where(col(Incident.state).in_(AWAITING))
        .order_by(col(Incident.id))
    ).all()
    live = session.exec(
        select(Approval.incident_id, Approval.kind, Approval.skill, Approval.expires_at)
        .join(Incident, col(Incident.id) == col(Approval.incident_id))
        .where(
            col(Incident.state).in_(AWAITING),
            col(Approval.used_at).is_(None),
            col(Approval.expires_at) > now,
        )
        .order_by(col(Approval.created_at))
    ).all()
    skills: dict[int, list[str]] = {}
    expiry: dict[int, datetime] = {}
    for incident_id, kind, skill, expires_at in live:
        skills.setdefault(incident_id, [])
        if kind == "skill" and skill:
            skills[incident_id].append(skill)
        if incident_id not in expiry or expires_at > expiry[incident_id]:
            expiry[incident_id] = expires_at
    return [
        Question(i, title, skills.get(i, []), expiry.get(i))
        for i, title in waiting
        if i is not None
    ]


def learned_in(session: Session, start: datetime, end: datetime) -> list[dict[str, Any]]:
    """The skills learned in the window, each once (its first lesson), oldest first."""
    entries = session.exec(
        select(IncidentTimeline)
        .where(
            IncidentTimeline.type == LEARNED,
            col(IncidentTimeline.at) >= start,
            col(IncidentTimeline.at) < end,
        )
        .order_by(col(IncidentTimeline.id))
    ).all()
    seen: dict[str, dict[str, Any]] = {}
    for e in entries:
        data = e.data or {}
        name = data.get("learned_skill")
        if not name or data.get("skill_known") or name in seen:
            continue
        commit = str(data.get("skill_commit") or "")[:10]
        seen[str(name)] = {"skill": str(name), "incident": e.incident_id, "commit": commit}
    return list(seen.values())


def count(session: Session, start: datetime, end: datetime, now: datetime | None = None) -> Counts:
    """The figures for the window ``[start, end)``; awaiting and pending as of ``now``."""
    counts = Counts(start, end)
    resolved = session.exec(
        select(Incident.details).where(
            Incident.state == IncidentState.resolved,
            col(Incident.resolved_at) >= start,
            col(Incident.resolved_at) < end,
        )
    ).all()
    for details in resolved:
        how = healed_by(details or {})
        if how == SKILL:
            counts.healed_by_skill += 1
        elif how == HUMAN:
            counts.healed_by_human += 1
        else:
            counts.recovered += 1
    counts.learned = learned_in(session, start, end)
    counts.awaiting = questions(session, now or utcnow())
    return counts


def last_day(session: Session, now: datetime | None = None) -> Counts:
    """The figures for the 24 hours before ``now``, as the scheduled report counts them."""
    end = now or utcnow()
    return count(session, end - DAY, end, end)


def summary_text(c: Counts) -> str:
    """The figures in two plain lines (``guard incidents list --summary``)."""
    return (
        f"now: awaiting a human: {len(c.awaiting)}, pending approvals: {len(c.pending)}\n"
        f"last 24 h: healed by a skill: {c.healed_by_skill}, healed by a human's fix: "
        f"{c.healed_by_human}, recovered on their own: {c.recovered}, "
        f"skills learned: {len(c.learned)}"
    )
