"""What the slash commands say: pure functions from the store (and the runtime) to text in a
channel's markup, so they are plain, testable functions.

Tested through every channel by tests/notify/test_inbound_contract.py.
"""

from __future__ import annotations

from sqlmodel import col, select

from guard.config import Settings
from guard.domain.durations import format_duration
from guard.domain.records import utcnow
from guard.notify.channel import Markup
from guard.ports.running import HealthSource
from guard.skills.library import load_library
from guard.store import mutes
from guard.store.db import Database
from guard.store.models import Incident, IncidentState


def help_text(m: Markup) -> str:
    return f"""{m.bold("Guard")} commands
/status: monitors' health and open incidents
/incidents: open incidents
/skills: the skills Guard knows
/fix ID COMMAND: run a fix for an incident (or reply to its message with the command)
/ack ID: acknowledge an incident (its escalation and reminders stop)
/mute TARGET DURATION: e.g. {m.code("/mute api 2h")}
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


def incidents_text(db: Database, m: Markup) -> str:
    rows = _open(db)
    if not rows:
        return "No open incidents. ✅"
    esc = m.escape
    lines = [m.bold(f"{len(rows)} open incident(s)")]
    lines += [f"#{i.id} [{esc(i.state)}] {esc(i.title)} x{i.count}" for i in rows]
    return m.cut("\n".join(lines))


def status_text(db: Database, runtime: HealthSource | None, m: Markup) -> str:
    esc = m.escape
    lines = [m.bold("Guard status")]
    now = utcnow()
    for mon in runtime.health() if runtime is not None else []:
        mark = {True: "🟢", False: "🔴", None: "⚪"}[mon["healthy"]]
        last = mon.get("last_check")
        ago = f"{format_duration((now - last).total_seconds())} ago" if last else "not yet"
        lines.append(f"{mark} {esc(mon['id'])} ({esc(mon['type'])}), last check {ago}")
    if runtime is None:
        lines.append("monitors: not known to this process")
    for mute in mutes.all_active(db):
        lines.append(f"🔕 {esc(mute.target)} muted until {mute.until:%H:%M} UTC by {esc(mute.by)}")
    lines += ["", incidents_text(db, m)]
    return m.cut("\n".join(lines))


def skills_text(settings: Settings, m: Markup) -> str:
    skills, quarantined = load_library(settings.skills_dir, settings.builtin_skills_dir)
    if not skills and not quarantined:
        return "No skills yet: Guard learns one from every fix that cures an incident."
    esc = m.escape
    lines = [m.bold(f"{len(skills)} skill(s)")]
    for s in skills:
        review = ""
        if s.pending and s.review is not None:
            review = f" 🔍 under review: {esc(s.review.link)}"
        elif s.review is not None and s.review.status == "merged":
            review = " (reviewed and merged)"
        lines.append(
            f"• {m.bold(s.name)} ({esc(s.spec.trust)}, {esc(s.spec.origin)})"
            f"{review}: {esc(s.description[:120])}"
        )
    lines += [
        f"⚠️ {m.bold(name)} is quarantined (does not load; see {m.code('guard check-config')})"
        for name in quarantined
    ]
    return m.cut("\n".join(lines))
