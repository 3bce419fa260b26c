"""Spending an approval: the single-use, expiring decision behind a button, for any channel.

A button carries only an opaque approval id (its data comes from the client and can be forged
or replayed), so it is looked up here. A press is honoured only if that approval exists, has not
been used, has not expired, and is one of the buttons of the *live* post it was pressed on (the
post is the channel's own record of what it sent, found by the channel, not the client's
claim). Claiming is one conditional UPDATE, so two presses cannot both win; the other approvals
of the same question are spent with it (one decision per question) and the post stops being
live. Each outcome is audited as ``<channel>.pressed`` or ``<channel>.refused``.

Whether the actor may answer at all is the gate's question (``guard.incidents.gate``), asked
before a claim.

Tested on every channel by ``tests/notify/test_inbound_contract.py`` (a press, a forged or
replayed one, a press on a changed proposal).
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from sqlalchemy import update
from sqlmodel import Session, col, select

from guard.domain.records import utcnow
from guard.incidents.gate import Actor, Refused
from guard.store import audit
from guard.store.db import Database
from guard.store.ladder import ANSWERS
from guard.store.models import Approval

CONFIRM_KINDS = ("fix_run", "fix_cancel")  # "Run `...` as a fix?": its own question
_VERBS = {"skill": "approve", "deny": "deny", "mute": "mute", "ack": "ack"}
_VERBS.update(dict.fromkeys(ANSWERS, "trust"))  # a promotion question: changing trust (admin)
ACK = "ack"  # acknowledging answers nothing: the question's other buttons stay live
ENDED_BY = "ended:"  # ``used_by`` of a question's approvals spent when its incident resolved


class Post(Protocol):
    """A message a channel sent with buttons, as the channel recorded it (a stored row)."""

    role: str  # "group": several incidents' buttons in one message
    live: bool  # its buttons still answer
    approvals: list[str]  # the ids of its buttons


def verb_for(approval: Approval | None) -> str:
    """The command a press on this approval asks for, as the gate is asked about it (an unknown
    approval: ``approve``, the claim then refuses it as forged)."""
    if approval is None:
        return "approve"
    if approval.kind in CONFIRM_KINDS:
        return "reply"
    return _VERBS.get(approval.kind, approval.kind)


def preview(db: Database, approval_id: str) -> Approval | None:
    """The approval behind a button, as it is now (nothing spent)."""
    with db.session() as session:
        return session.get(Approval, approval_id)


def claim_in(
    session: Session, approval_id: str, actor: Actor, post: Post | None
) -> Approval | Refused:
    """Spend the approval behind a press on ``post`` in the caller's transaction (a channel
    queues the press's command in the same one: a crash cannot spend a press and lose its
    command), or say why the press is refused. The actor is already authorised."""
    what = f"callback:{approval_id[:64]}"
    now = utcnow()
    approval = session.get(Approval, approval_id)
    if approval is None:
        return _refuse_in(session, actor, what, "unknown or forged button")
    if approval.used_at is not None:
        why = (
            "this question expired"
            if approval.used_by == "expired"
            else f"incident #{approval.incident_id} was {ended} since this question"
            if (ended := ended_as(approval.used_by))
            else f"already answered by {approval.used_by}"
        )
        return _refuse_in(session, actor, what, why, incident=approval.incident_id)
    if approval.expires_at <= now:
        return _refuse_in(
            session, actor, what, "this question expired", incident=approval.incident_id
        )
    if post is None or not post.live or approval_id not in post.approvals:
        return _refuse_in(
            session,
            actor,
            what,
            "this button does not belong to that message",
            incident=approval.incident_id,
        )
    won = session.execute(
        update(Approval)
        .where(col(Approval.id) == approval_id, col(Approval.used_at).is_(None))
        .values(used_at=now, used_by=actor.name)
    )
    if getattr(won, "rowcount", 0) != 1:
        return _refuse_in(session, actor, what, "already answered")
    if approval.kind == ACK:
        return _pressed(session, actor, approval, now)
    own = next((f for f in (CONFIRM_KINDS, ANSWERS) if approval.kind in f), None)
    session.execute(
        update(Approval)
        .where(
            col(Approval.incident_id) == approval.incident_id,
            col(Approval.kind).in_(own)
            if own
            else col(Approval.kind).not_in(CONFIRM_KINDS + ANSWERS),
            col(Approval.used_at).is_(None),
        )
        .values(used_at=now, used_by=f"superseded:{approval_id}")
    )
    if post.role == "group":  # the other incidents' buttons of the message still work
        spent = set(
            session.exec(
                select(Approval.id).where(Approval.incident_id == approval.incident_id)
            ).all()
        )
        post.approvals = [a for a in post.approvals if a not in spent]
    else:
        post.live = False  # answered: a sync must not close it as "expired" meanwhile
    session.add(post)
    return _pressed(session, actor, approval, now)


def end_questions_in(session: Session, incident_id: int, state: str) -> None:
    """Spend the unanswered buttons of an incident's questions as it ends (``state``): if it
    fails again and is asked anew, an old button must not answer the new question, which the
    presser never saw. A promotion question (asked once it is resolved) is not its own."""
    session.execute(
        update(Approval)
        .where(
            col(Approval.incident_id) == incident_id,
            col(Approval.kind).not_in(ANSWERS),
            col(Approval.used_at).is_(None),
        )
        .values(used_at=utcnow(), used_by=f"{ENDED_BY}{state}")
    )


def ended_as(used_by: str | None) -> str:
    """The state an approval's incident ended in, if that is what spent it (else "")."""
    return used_by.removeprefix(ENDED_BY) if used_by and used_by.startswith(ENDED_BY) else ""


def _pressed(session: Session, actor: Actor, approval: Approval, now: datetime) -> Approval:
    audit.append(
        session,
        actor=actor.name,
        action=f"{actor.channel}.pressed",
        subject=f"incident:{approval.incident_id}",
        data={"kind": approval.kind, "skill": approval.skill},
    )
    approval.used_at, approval.used_by = now, actor.name
    return approval


def _refuse_in(session: Session, actor: Actor, what: str, reason: str, **data: object) -> Refused:
    audit.append(
        session,
        actor=actor.name,
        action=f"{actor.channel}.refused",
        subject=what,
        data={"reason": reason, **data},
    )
    return Refused(reason)
