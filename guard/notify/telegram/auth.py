"""Who may do what from Telegram, and whether a button press is genuine.

Every update is authorised by the sender's ``from.id`` against ``telegram.allowed_user_ids``;
the chat a message came from proves nothing (anyone can be in a group). An empty allowlist
allows nobody: Guard fails closed.

Callback data comes from the client and can be forged or replayed, so it carries only an
opaque approval id that is looked up here. A press is honoured only if that approval exists,
has not been used, has not expired, and is one of the buttons of the *live* message it was
pressed on (the message id and chat are Guard's own record, not the client's claim). Claiming
is one conditional UPDATE, so two presses cannot both win; the other approvals of the same
question are spent with it (one decision per question) and the message stops being live. Every
refusal is written to the audit chain, but a user who is not on the allowlist at most once per
``REFUSAL_WINDOW``: a stranger's flood cannot fill the audit log, the conversation or the outbox.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from sqlalchemy import update
from sqlmodel import Session, col, select

from guard.config import TelegramSettings
from guard.records import utcnow
from guard.store import audit
from guard.store.db import Database
from guard.store.models import Approval
from guard.store.models import ChannelMessage as TelegramMessage

CONFIRM_KINDS = ("fix_run", "fix_cancel")  # "Run `...` as a fix?": its own question


def actor(user_id: int) -> str:
    return f"telegram:{user_id}"


REFUSAL_WINDOW = 60.0  # seconds: one audit row and one answer per stranger per window
_MAX_TRACKED = 10_000  # strangers remembered at once (the oldest windows are dropped first)


@dataclass(frozen=True)
class Refusal:
    reason: str  # what the user is told, and what the audit entry says
    logged: bool = True  # False: inside the user's quiet window (not audited, not answered)


class Authoriser:
    def __init__(self, settings: TelegramSettings, db: Database) -> None:
        self.allowed = frozenset(settings.allowed_user_ids)
        self.db = db
        self._windows: dict[int, tuple[float, int]] = {}  # user -> (window start, dropped)
        self._lock = threading.Lock()

    def user_allowed(self, user_id: int | None) -> bool:
        return user_id is not None and user_id in self.allowed

    def quiet(self, user_id: int | None) -> bool:
        """Whether a refused user is inside a window already audited and answered (their
        messages then leave no row anywhere: not audit, not conversation, not outbox)."""
        with self._lock:
            window = self._windows.get(user_id or 0)
        return window is not None and time.monotonic() - window[0] < REFUSAL_WINDOW

    def refuse(self, user_id: int | None, what: str, reason: str, **data: object) -> Refusal:
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
                actor=actor(key),
                action="telegram.refused",
                subject=what,
                data={"reason": reason, **data, **extra},
            )
        return Refusal(reason)

    def message_for(self, chat_id: int | str, message_id: int) -> TelegramMessage | None:
        with self.db.session() as session:
            return session.exec(
                select(TelegramMessage).where(
                    TelegramMessage.chat_id == str(chat_id),
                    TelegramMessage.message_id == message_id,
                )
            ).first()

    def claim(
        self, data: str, user_id: int | None, chat_id: int | str | None, message_id: int | None
    ) -> Approval | Refusal:
        """Spend the approval behind a button press, or say why the press is refused."""
        what = f"callback:{data[:64]}"
        if not self.user_allowed(user_id):
            why = (
                "no one is allowed yet (telegram.allowed_user_ids is empty)"
                if not self.allowed
                else "you are not on this Guard's allowlist"
            )
            return self.refuse(user_id, what, why, chat=str(chat_id))
        assert user_id is not None
        with self.db.session() as session:
            return self.claim_in(session, data, user_id, chat_id, message_id)

    def preview(self, data: str) -> Approval | None:
        """The approval behind a button, as it is now (nothing spent)."""
        with self.db.session() as session:
            return session.get(Approval, data)

    def claim_in(
        self,
        session: Session,
        data: str,
        user_id: int,
        chat_id: int | str | None,
        message_id: int | None,
    ) -> Approval | Refusal:
        """``claim`` for an allowed user, in the caller's transaction (the gateway queues the
        press's command in the same one: a crash cannot spend a press and lose its command)."""
        what = f"callback:{data[:64]}"
        now = utcnow()
        approval = session.get(Approval, data)
        if approval is None:
            return self._refuse_in(session, user_id, what, "unknown or forged button")
        if approval.used_at is not None:
            why = (
                "this question expired"
                if approval.used_by == "expired"
                else f"already answered by {approval.used_by}"
            )
            return self._refuse_in(session, user_id, what, why, incident=approval.incident_id)
        if approval.expires_at <= now:
            return self._refuse_in(
                session, user_id, what, "this question expired", incident=approval.incident_id
            )
        msg = None
        if chat_id is not None and message_id is not None:
            msg = session.exec(
                select(TelegramMessage).where(
                    TelegramMessage.chat_id == str(chat_id),
                    TelegramMessage.message_id == message_id,
                )
            ).first()
        if msg is None or not msg.live or data not in msg.approvals:
            return self._refuse_in(
                session,
                user_id,
                what,
                "this button does not belong to that message",
                incident=approval.incident_id,
            )
        won = session.execute(
            update(Approval)
            .where(col(Approval.id) == data, col(Approval.used_at).is_(None))
            .values(used_at=now, used_by=actor(user_id))
        )
        if getattr(won, "rowcount", 0) != 1:
            return self._refuse_in(session, user_id, what, "already answered")
        family = CONFIRM_KINDS if approval.kind in CONFIRM_KINDS else None
        session.execute(
            update(Approval)
            .where(
                col(Approval.incident_id) == approval.incident_id,
                col(Approval.kind).in_(family)
                if family
                else col(Approval.kind).not_in(CONFIRM_KINDS),
                col(Approval.used_at).is_(None),
            )
            .values(used_at=now, used_by=f"superseded:{data}")
        )
        if msg.role == "group":  # the other incidents' buttons of the message still work
            spent = set(
                session.exec(
                    select(Approval.id).where(Approval.incident_id == approval.incident_id)
                ).all()
            )
            msg.approvals = [a for a in msg.approvals if a not in spent]
        else:
            msg.live = False  # answered: the sync must not close it as "expired" meanwhile
        session.add(msg)
        audit.append(
            session,
            actor=actor(user_id),
            action="telegram.pressed",
            subject=f"incident:{approval.incident_id}",
            data={"kind": approval.kind, "skill": approval.skill},
        )
        approval.used_at, approval.used_by = now, actor(user_id)
        return approval

    def _refuse_in(
        self, session: Session, user_id: int, what: str, reason: str, **data: object
    ) -> Refusal:
        audit.append(
            session,
            actor=actor(user_id),
            action="telegram.refused",
            subject=what,
            data={"reason": reason, **data},
        )
        return Refusal(reason)
