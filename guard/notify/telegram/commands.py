"""What the bot's commands say: pure functions from the store (and the runtime) to HTML text.

Kept apart from the PTB handlers in ``gateway`` so they are plain, testable functions.
"""

from __future__ import annotations

from sqlmodel import col, select

from guard.config import Settings
from guard.domain.durations import format_duration
from guard.domain.records import utcnow
from guard.notify.telegram.messages import cut, esc
from guard.ports.running import HealthSource
from guard.skills.library import load_library
from guard.store import mutes
from guard.store.db import Database
from guard.store.models import Incident, IncidentState

HELP = """<b>Guard</b> commands
/status: monitors' health and open incidents
/incidents: open incidents
/skills: the skills Guard knows
/fix ID COMMAND: run a fix for an incident (or reply to its message with the command)
/ack ID: acknowledge an incident (its escalation and reminders stop)
/mute TARGET DURATION: e.g. <code>/mute api 2h</code>
/unmute TARGET
/report: the daily report, now
/help: this list

Buttons under an incident: run a skill, deny, mute for 1 h, or send a fix."""


def _open(db: Database, limit: int = 15) -> list[Incident]:
    with db.session() as session:
        return list(
            session.exec(
                select(Incident)
                .where(col(Incident.state) != IncidentState.resolved)
                .order_by(col(Incident.id).desc())
                .limit(limit)
            ).all()
        )


def incidents_text(db: Database) -> str:
    rows = _open(db)
    if not rows:
        return "No open incidents. ✅"
    lines = [f"<b>{len(rows)} open incident(s)</b>"]
    lines += [f"#{i.id} [{esc(i.state)}] {esc(i.title)} x{i.count}" for i in rows]
    return cut("\n".join(lines))


def status_text(db: Database, runtime: HealthSource | None) -> str:
    lines = ["<b>Guard status</b>"]
    now = utcnow()
    for m in runtime.health() if runtime is not None else []:
        mark = {True: "🟢", False: "🔴", None: "⚪"}[m["healthy"]]
        last = m.get("last_check")
        ago = f"{format_duration((now - last).total_seconds())} ago" if last else "not yet"
        lines.append(f"{mark} {esc(m['id'])} ({esc(m['type'])}), last check {ago}")
    if runtime is None:
        lines.append("monitors: not known to this process")
    for mute in mutes.all_active(db):
        lines.append(f"🔕 {esc(mute.target)} muted until {mute.until:%H:%M} UTC by {esc(mute.by)}")
    lines += ["", incidents_text(db)]
    return cut("\n".join(lines))


def skills_text(settings: Settings) -> str:
    skills, quarantined = load_library(settings.skills_dir, settings.builtin_skills_dir)
    if not skills and not quarantined:
        return "No skills yet: Guard learns one from every fix that cures an incident."
    lines = [f"<b>{len(skills)} skill(s)</b>"]
    for s in skills:
        review = ""
        if s.pending and s.review is not None:
            review = f" 🔍 under review: {esc(s.review.link)}"
        elif s.review is not None and s.review.status == "merged":
            review = " (reviewed and merged)"
        lines.append(
            f"• <b>{esc(s.name)}</b> ({esc(s.spec.trust)}, {esc(s.spec.origin)})"
            f"{review}: {esc(s.description[:120])}"
        )
    lines += [
        f"⚠️ <b>{esc(name)}</b> is quarantined (does not load; see <code>guard check-config</code>)"
        for name in quarantined
    ]
    return cut("\n".join(lines))
