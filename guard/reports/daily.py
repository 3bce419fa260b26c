"""The daily status report: figures for one window, computed from the store, then rendered.

The window is either a calendar day in ``report.timezone`` (``guard report daily --date D``) or
the 24 hours before now (the scheduled report). Definitions, so the numbers can be checked:

- opened: incidents whose ``opened_at`` falls in the window;
- resolved in the window, split by how (healed by a skill, healed by a human's fix, recovered
  on their own), skills learned, awaiting a human and approvals pending: as
  ``guard.reports.counts`` defines them, the figures the web overview and ``guard incidents
  list --summary`` show too;
- escalated: incidents that moved to ``escalated`` in the window (from the timeline);
- still open: incidents not resolved now that were opened before the window ended;
- MTTR: the mean of ``resolved_at - opened_at`` over incidents resolved in the window;
- noisiest targets: by signals counted on incidents opened in the window;
- skills: those that ran in the window, or are demoted, proposed for promotion or stale
  now, each with its outcomes (``guard.skills.outcomes``, ``guard.skills.ladder``);
- skills pending review: learned skills on their own branch, not yet on ``skills.git_branch``
  (now), each with its branch or pull request;
- audit head: the audit chain's length and its head ``SEQ:HASH`` (now), the exact argument of
  ``guard audit verify --head``; posted to the chat daily, it is an anchor no one with only the
  database can rewrite.

The template is ``daily.html.j2`` (the HTML subset chat channels render), shipped with the
package; a file of that name in ``data_dir/templates/`` replaces it.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from sqlalchemy import func
from sqlmodel import col, select

from guard.config import Settings
from guard.domain.records import utcnow
from guard.redact import redact
from guard.reports import counts
from guard.store import audit
from guard.store.db import Database
from guard.store.models import (
    ACTIVE_STATES,
    AuditEntry,
    Incident,
    IncidentState,
    IncidentTimeline,
)

if TYPE_CHECKING:
    from jinja2 import Environment

TEMPLATE = "daily.html.j2"


@dataclass
class DailyReport:
    title: str
    start: datetime
    end: datetime
    timezone: str
    opened: int = 0
    auto_healed: int = 0  # healed by a skill (the name templates on the data volume know)
    healed_by_human: int = 0  # healed by a human's fix
    recovered: int = 0
    awaiting: int = 0  # incidents awaiting a human, now
    escalated: int = 0
    still_open: int = 0
    mttr_seconds: float | None = None
    noisiest: list[tuple[str, int]] = field(default_factory=list)
    learned: list[dict[str, Any]] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)
    review: list[dict[str, Any]] = field(default_factory=list)  # skills pending review
    skills: list[dict[str, Any]] = field(default_factory=list)  # outcomes, ladder (ladder.py)
    per_hour: list[int] = field(default_factory=lambda: [0] * 24)
    audit_entries: int = 0  # how many entries the chain holds (fewer than seq after a cut)
    audit_seq: int = 0  # the audit chain's head: in the chat, it anchors the chain
    audit_head: str = ""

    @property
    def mttr(self) -> str:
        return duration_text(self.mttr_seconds)


def duration_text(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    if seconds < 90:
        return f"{seconds:.0f}s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def window(
    settings: Settings, day: date | None = None, now: datetime | None = None
) -> tuple[datetime, datetime, str]:
    tz = ZoneInfo(settings.report.timezone)
    if day is not None:
        start = datetime(day.year, day.month, day.day, tzinfo=tz)
        return start, start + timedelta(days=1), f"Guard daily report for {day.isoformat()}"
    end = (now or utcnow()).astimezone(tz)
    return end - timedelta(days=1), end, f"Guard daily report, 24 h to {end:%Y-%m-%d %H:%M}"


def gather(
    db: Database, settings: Settings, day: date | None = None, now: datetime | None = None
) -> DailyReport:
    start, end, title = window(settings, day, now)
    report = DailyReport(title, start, end, settings.report.timezone)
    tz = ZoneInfo(settings.report.timezone)
    with db.session() as session:
        opened = session.exec(
            select(Incident).where(col(Incident.opened_at) >= start, col(Incident.opened_at) < end)
        ).all()
        resolved = session.exec(
            select(Incident).where(
                col(Incident.resolved_at) >= start, col(Incident.resolved_at) < end
            )
        ).all()
        escalations = session.exec(
            select(IncidentTimeline.incident_id).where(
                IncidentTimeline.type == "state_changed",
                IncidentTimeline.to_state == IncidentState.escalated,
                col(IncidentTimeline.at) >= start,
                col(IncidentTimeline.at) < end,
            )
        ).all()
        still_open = session.exec(
            select(func.count())
            .select_from(Incident)
            .where(col(Incident.state).in_(ACTIVE_STATES), col(Incident.opened_at) < end)
        ).one()
        figures = counts.count(session, start, end)
        report.audit_seq, report.audit_head = audit.head(session)
        report.audit_entries = session.exec(select(func.count()).select_from(AuditEntry)).one()
    report.opened = len(opened)
    for inc in opened:
        report.per_hour[inc.opened_at.astimezone(tz).hour] += 1
    noise: Counter[str] = Counter()
    for inc in opened:
        noise[inc.target] += max(inc.count, 1)
    report.noisiest = noise.most_common(5)
    durations = []
    for inc in resolved:
        assert inc.resolved_at is not None
        durations.append((inc.resolved_at - inc.opened_at).total_seconds())
    report.mttr_seconds = sum(durations) / len(durations) if durations else None
    report.escalated = len(set(escalations))
    report.still_open = still_open
    report.auto_healed = figures.healed_by_skill
    report.healed_by_human = figures.healed_by_human
    report.recovered = figures.recovered
    report.learned = figures.learned
    report.awaiting = len(figures.awaiting)
    report.pending = [
        {
            "incident": q.incident,
            "skill": ", ".join(q.skills) or "deny or mute only",
            "expires": q.expires_at.astimezone(tz).strftime("%H:%M"),
        }
        for q in figures.pending
        if q.expires_at is not None
    ]

    from guard.skills.review import ReviewBook

    report.review = [
        {"skill": name, "incident": r.incident, "link": r.link}
        for name, r in ReviewBook(settings.skills_dir).pending().items()
    ]
    report.skills = skill_lines(db, settings, start, end)
    return report


def skill_lines(
    db: Database, settings: Settings, start: datetime, end: datetime
) -> list[dict[str, Any]]:
    """The skills that ran in the window, or stand out on the ladder now (demoted, proposed
    for promotion, stale), each with its outcomes (``guard.skills.outcomes``)."""
    from guard.skills.ladder import describe
    from guard.skills.library import load_library

    skills, _ = load_library(settings.skills_dir, settings.builtin_skills_dir)
    with db.session() as session:
        found = describe(session, skills, settings.skills)
    lines = []
    for name, (out, standing) in found.items():
        ran = out.last_used is not None and start <= out.last_used < end
        notes = [
            text
            for text, on in (
                ("demoted to approval", standing.demoted),
                ("promotion proposed", standing.proposed),
                ("stale", standing.stale),
            )
            if on
        ]
        if ran or notes:
            lines.append({"skill": name, "summary": out.summary(), "notes": ", ".join(notes)})
    return lines


def environment(settings: Settings) -> Environment:
    """Jinja2's, loaded here: a ``guard run`` loads it with its first report, not at start."""
    from jinja2 import ChoiceLoader, Environment, FileSystemLoader, PackageLoader, select_autoescape

    loaders: list[Any] = []
    custom = Path(settings.data_dir) / "templates"
    if custom.is_dir():
        loaders.append(FileSystemLoader(str(custom)))
    loaders.append(PackageLoader("guard.reports", "templates"))
    return Environment(
        loader=ChoiceLoader(loaders),
        autoescape=select_autoescape(["j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render(report: DailyReport, settings: Settings) -> str:
    """The report as chat HTML (values escaped by the template's autoescape), redacted."""
    text = redact(environment(settings).get_template(TEMPLATE).render(r=report))
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def to_plain(html_text: str) -> str:
    """The same text without markup, for a terminal."""
    return html.unescape(re.sub(r"</?(b|i|code|pre|u|s)>", "", html_text))
