"""The question's "Acknowledge" button and ``/ack ID``.

An authorised press acknowledges the incident (``guard.notify.escalation.acknowledge``) in the
transaction that stores the update and spends the button's approval; the question's other
buttons stay live (acknowledging answers nothing). A refused press never reaches here (the
handler refuses and audits it like any other). ``/ack ID`` acknowledges the same way; its
answer is queued with the update stored (a redelivered ``/ack`` says who acknowledged).

Tested through every channel by tests/notify/test_inbound_contract.py.
"""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from guard.domain.exceptions import GuardError
from guard.incidents.gate import NotAuthorised, Refused
from guard.notify import escalation
from guard.notify.answers.base import skipped
from guard.notify.answers.senders import Authoriser, UserId
from guard.notify.inbound import Inbound
from guard.store.db import Database


class _Spent(Exception):
    """The approval was spent, expired or moved between the preview and the press."""


def ack_press(
    db: Database,
    auth: Authoriser,
    event: Inbound,
    incident_id: int,
) -> str:
    """Acknowledge on a press; return what to answer the presser (blocking: run it in a
    thread)."""
    data, uid = event.data, event.user
    chat_id, message_id = event.chat, event.message_id
    assert uid is not None

    def spend(session: Session) -> None:
        event.handled().mark(session)
        got = auth.claim_in(session, data, uid, chat_id, message_id)
        if isinstance(got, Refused):
            raise _Spent(got.reason)

    try:
        acked = escalation.acknowledge(db, incident_id, auth.actor(uid), auth.gate, also=spend)
    except IntegrityError:
        skipped(event)
        return "Already handled"
    except _Spent as exc:
        claimed = auth.claim(data, uid, chat_id, message_id)  # audits the refusal
        return f"Refused: {claimed.reason if isinstance(claimed, Refused) else exc}"
    except (NotAuthorised, GuardError) as exc:
        return f"Refused: {exc}"
    if not acked.first:
        return f"Already acknowledged by {acked.by}"
    return f"Acknowledged by {acked.by}: escalation and reminders stop."


def ack_command(db: Database, auth: Authoriser, user_id: UserId, number: str) -> str:
    """``/ack ID``: acknowledge, and say what happened (blocking: run it in a thread)."""
    try:
        acked = escalation.acknowledge(
            db, int(number.lstrip("#"), 10), auth.actor(user_id), auth.gate
        )
    except (NotAuthorised, GuardError) as exc:
        return f"Not acknowledged: {exc}"
    if not acked.first:
        return f"Incident #{acked.incident_id} was already acknowledged by {acked.by}."
    return (
        f"Incident #{acked.incident_id} acknowledged by {acked.by}: escalation and reminders stop."
    )
