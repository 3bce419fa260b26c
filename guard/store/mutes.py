"""Mutes: a target whose incidents are recorded but neither announced nor remediated.

A mute has an end (``until``); ``active`` ignores ended and cleared ones, so nothing needs to
sweep them. The agent checks ``active`` before it handles an incident; a chat channel's
mute button, ``/mute`` and ``/unmute`` write them. Every change is audited.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlmodel import col, select

from guard.domain.records import utcnow
from guard.store import audit
from guard.store.db import Database
from guard.store.models import Mute


def mute(db: Database, target: str, seconds: float, by: str) -> Mute:
    """Mute ``target`` for ``seconds`` from now."""
    row = Mute(target=target, until=utcnow() + timedelta(seconds=seconds), by=by)
    with db.session() as session:
        session.add(row)
        audit.append(
            session,
            actor=by,
            action="target.muted",
            subject=f"target:{target}",
            data={"until": row.until.isoformat()},
        )
    return row


def unmute(db: Database, target: str, by: str) -> int:
    """End every active mute of ``target``; return how many there were."""
    now = utcnow()
    with db.session() as session:
        rows = session.exec(
            select(Mute).where(
                Mute.target == target, col(Mute.cleared_at).is_(None), col(Mute.until) > now
            )
        ).all()
        for row in rows:
            row.cleared_at = now
            session.add(row)
        audit.append(
            session,
            actor=by,
            action="target.unmuted",
            subject=f"target:{target}",
            data={"mutes": len(rows)},
        )
    return len(rows)


def active(db: Database, target: str, at: datetime | None = None) -> Mute | None:
    """The mute in force for ``target`` (the one ending last), or None."""
    now = at or utcnow()
    with db.session() as session:
        return session.exec(
            select(Mute)
            .where(Mute.target == target, col(Mute.cleared_at).is_(None), col(Mute.until) > now)
            .order_by(col(Mute.until).desc())
        ).first()


def all_active(db: Database) -> list[Mute]:
    now = utcnow()
    with db.session() as session:
        return list(
            session.exec(
                select(Mute)
                .where(col(Mute.cleared_at).is_(None), col(Mute.until) > now)
                .order_by(col(Mute.target))
            ).all()
        )
