"""A chat sender and the gate: who a sender is, and the quiet window for strangers.

Every inbound event is authorised by its sender's id in the channel (``Authoriser.actor``:
``<channel>:<id>``) through the gate (``guard.incidents.gate``: the role policy, then the
allowlist); the chat a message came from proves nothing (anyone can be in a group). An id with
no role and not on the allowlist is refused; an empty allowlist and no roles allow nobody: Guard
fails closed.

Button presses spend approvals through ``guard.incidents.approvals``; this module finds the
channel's message a press came from (Guard's own record, not the client's claim). Every refusal is
written to the audit chain, but a user the gate refuses at most once per ``REFUSAL_WINDOW``: a
stranger's flood cannot fill the audit log, the conversation or the outbox.

Tested through every channel by tests/notify/test_inbound_contract.py.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from sqlmodel import Session, select

from guard.incidents import approvals
from guard.incidents.gate import Actor, Allowed, Gate, Refused
from guard.store import audit
from guard.store.db import Database
from guard.store.models import Approval, ChannelMessage, Incident

UserId = int | str


def actor(channel: str, user_id: UserId | None) -> Actor:
    """A sender as the gate and the audit log know them (``<channel>:<id>``)."""
    return Actor(channel, str(user_id) if user_id is not None else "unknown")


REFUSAL_WINDOW = 60.0  # seconds: one audit row and one answer per stranger per window
_MAX_TRACKED = 10_000  # strangers remembered at once (the oldest windows are dropped first)


@dataclass(frozen=True)
class Refusal(Refused):
    logged: bool = True  # False: inside the user's quiet window (not audited, not answered)


class Authoriser:
    """The gate as one channel's senders meet it (``channel``: their actors' channel)."""

    def __init__(self, channel: str, db: Database, gate: Gate) -> None:
        self.channel = channel
        self.gate = gate
        self.db = db
        self._windows: dict[UserId, tuple[float, int]] = {}  # user -> (window start, dropped)
        self._lock = threading.Lock()

    def actor(self, user_id: UserId | None) -> Actor:
        return actor(self.channel, user_id)

    def decide(
        self, user_id: UserId | None, verb: str, incident_id: int | None = None
    ) -> Allowed | Refused:
        """The gate's decision on a sender (reads the incident: call it off the event loop when
        ``incident_id`` is given)."""
        incident = None
        if incident_id is not None:
            with self.db.session() as session:
                incident = session.get(Incident, incident_id)
        return self.gate.authorise(self.actor(user_id), verb, incident)

    def quiet(self, user_id: UserId | None) -> bool:
        """Whether a refused user is inside a window already audited and answered (their
        messages then leave no row anywhere: not audit, not conversation, not outbox)."""
        with self._lock:
            window = self._windows.get(user_id or 0)
        return window is not None and time.monotonic() - window[0] < REFUSAL_WINDOW

    def refuse(self, user_id: UserId | None, what: str, reason: str, **data: object) -> Refusal:
        """Audit a refusal: the first of each ``REFUSAL_WINDOW`` per user, with how many were
        dropped in the window before; the rest are only counted (a stranger's flood writes
        one row a minute, not one per message)."""
        key, now = user_id or 0, time.monotonic()
        with self._lock:
            start, dropped = self._windows.get(key, (-REFUSAL_WINDOW, 0))
            if now - start < REFUSAL_WINDOW:
                self._windows[key] = (start, dropped + 1)
                return Refusal(reason, logged=False)
            self._windows.pop(key, None)
            self._windows[key] = (now, 0)
            while len(self._windows) > _MAX_TRACKED:
                self._windows.pop(next(iter(self._windows)))
        extra = {"dropped_before": dropped} if dropped else {}
        with self.db.session() as session:
            audit.append(
                session,
                actor=self.actor(key).name,
                action=f"{self.channel}.refused",
                subject=what,
                data={"reason": reason, **data, **extra},
            )
        return Refusal(reason)

    def message_for(self, chat_id: int | str, message_id: str) -> ChannelMessage | None:
        with self.db.session() as session:
            return _message_in(session, self.channel, chat_id, message_id)

    def preview(self, data: str) -> Approval | None:
        """The approval behind a button, as it is now (nothing spent)."""
        return approvals.preview(self.db, data)

    def claim(
        self,
        data: str,
        user_id: UserId | None,
        chat_id: int | str | None,
        message_id: str | None,
    ) -> Approval | Refused:
        """Spend the approval behind a button press, or say why the press is refused (the gate
        first: a refused sender is audited once a window, and nothing is looked at further)."""
        pressed = self.preview(data)
        decision = self.decide(
            user_id, approvals.verb_for(pressed), pressed.incident_id if pressed else None
        )
        if isinstance(decision, Refused):
            return self.refuse(user_id, f"callback:{data[:64]}", decision.reason, chat=str(chat_id))
        assert user_id is not None
        with self.db.session() as session:
            return self.claim_in(session, data, user_id, chat_id, message_id)

    def claim_in(
        self,
        session: Session,
        data: str,
        user_id: UserId,
        chat_id: int | str | None,
        message_id: str | None,
    ) -> Approval | Refused:
        """``claim`` for an authorised sender, in the caller's transaction (the gateway queues
        the press's command in the same one)."""
        msg = None
        if chat_id is not None and message_id is not None:
            msg = _message_in(session, self.channel, chat_id, message_id)
        return approvals.claim_in(session, data, self.actor(user_id), msg)


def _message_in(
    session: Session, channel: str, chat_id: int | str, message_id: str
) -> ChannelMessage | None:
    return session.exec(
        select(ChannelMessage).where(
            ChannelMessage.channel == channel,
            ChannelMessage.chat_id == str(chat_id),
            ChannelMessage.message_id == message_id,
        )
    ).first()
