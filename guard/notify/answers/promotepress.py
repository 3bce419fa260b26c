"""A press on a promotion question's *Promote* or *Keep asking* (``guard.notify.promotionask``).

The gate has already allowed the sender (the buttons' verb is ``trust``: admin; an approver's
press is refused and audited before it reaches here, like any refused press). One transaction
stores the update, spends the button (and its sibling), records the answer on the proposal
(``guard.skills.localpromotion.decide_in``) and queues the edit of every copy of the question
(who answered what, no buttons: ``guard.notify.promotionask.close_in``); a promote is then
finished (``complete``: the commit, ``skill.promoted``), by this press or, after a crash, by the
next run of the job.

Tested by tests/skills/test_localpromotion.py.
"""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from guard.config import Settings
from guard.domain.exceptions import GuardError
from guard.incidents.gate import Refused
from guard.notify import promotionask
from guard.notify.answers.senders import Authoriser
from guard.notify.inbound import Inbound
from guard.notify.outbox import queue
from guard.skills import localpromotion
from guard.store.db import Database
from guard.store.ladder import KEEP, PROPOSED, LadderStep, open_steps
from guard.store.models import Approval, OutboxMessage


class _Spent(Exception):
    """The button was spent, expired or moved between the preview and the press."""


def promotion_press(db: Database, settings: Settings, auth: Authoriser, event: Inbound) -> str:
    """Answer a proposal on a press; return what to tell the presser (blocking: run it in a
    thread)."""
    uid = event.user
    assert uid is not None
    who = auth.actor(uid).name
    with db.session() as session:
        approval = session.get(Approval, event.data)
        step = _step_of(session, event.data)
    if approval is None or step is None or step.id is None:
        return "Refused: this promotion was already answered"
    step_id = step.id
    said = f"Promoted by {who}" if approval.kind != KEEP else f"Kept asking by {who}"
    edits: list[tuple[OutboxMessage, int]] = []

    def spend(session: Session) -> None:
        event.handled().mark(session)
        got = auth.claim_in(session, event.data, uid, event.chat, event.message_id)
        if isinstance(got, Refused):
            raise _Spent(got.reason)
        localpromotion.decide_in(session, step_id, approval.kind, who)
        edits.extend(promotionask.close_in(session, step, said))

    try:
        with db.session() as session:
            spend(session)
        for row, outbox_id in edits:
            queue.remember(db, row, outbox_id)
    except IntegrityError:
        return "Already handled"
    except _Spent:
        claimed = auth.claim(event.data, uid, event.chat, event.message_id)  # audits it
        return f"Refused: {claimed.reason if isinstance(claimed, Refused) else 'already answered'}"
    except GuardError as exc:
        return f"Refused: {exc}"
    if approval.kind == KEEP:
        return f"Kept asking by {who}: skill {step.skill} still asks first"
    try:
        notes = localpromotion.complete(db, settings)
    except GuardError as exc:  # the job tries again; the answer is stored
        return f"Promotion of {step.skill} stored; the commit failed for now: {exc}"
    return next((n for n in notes if f"skill {step.skill} " in n), f"{step.skill} promoted")


def _step_of(session: Session, approval_id: str) -> LadderStep | None:
    """The open proposal whose question holds this button."""
    for step in open_steps(session):
        if step.step == PROPOSED and approval_id in (step.details.get("approvals") or []):
            return step
    return None
