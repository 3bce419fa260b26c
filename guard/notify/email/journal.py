"""The mails Guard sent or is sending, per recipient: the Message-ID of each, generated and
committed before the SMTP exchange, and marked accepted when the server said 250.

The Message-ID is the mail's id everywhere in Guard (the outbox stores it as the message id).
SMTP has no way to ask a server "did you take this mail?", so the journal is what the outbox's
``find`` asks after a crash (``guard.notify.outbox.inflight``): a mail of that content marked
accepted whose id the outbox never stored was sent (adopted, not sent again); one still
unmarked may or may not have been (Guard died during the exchange, or the connection broke
after DATA), and is sent again with the same Message-ID, so a receiving store or client that
drops duplicate Message-IDs shows it once.

Kept in the store's key/value state (``MonitorState``), the newest ``KEEP`` per recipient.
Tested by tests/notify/email/test_email_channel.py and tests/notify/email/test_email_run.py.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from email.utils import make_msgid
from typing import Any

from sqlmodel import col, select

from guard.store.db import Database
from guard.store.models import ChannelMessage
from guard.store.state import get_state, put_state

KEEP = 500


@dataclass(frozen=True)
class Mail:
    """One journal entry: the mail's Message-ID (its id in Guard) and subject."""

    message_id: str
    subject: str
    accepted: bool


def digest(*parts: object) -> str:
    """What identifies a mail's content (its text, its attachment, what it answers)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else repr(part).encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def _key(chat: str) -> str:
    return f"email.journal:{chat}"


def _mail(mid: str, entry: dict[str, Any]) -> Mail:
    return Mail(mid, str(entry["subject"]), bool(entry["ok"]))


def prepare(db: Database, chat: str, content: str, subject: str, domain: str) -> Mail:
    """The entry to send under: the unaccepted one of this content (a resend keeps its
    Message-ID), else a new one, committed before the exchange starts."""
    with db.session() as session:
        state = get_state(session, _key(chat))
        mails: dict[str, Any] = dict(state.get("mails", {}))
        for mid, entry in mails.items():
            if entry["digest"] == content and not entry["ok"]:
                return _mail(mid, entry)
        seq = int(state.get("next", 0)) + 1
        mid = make_msgid("guard", domain)
        mails[mid] = {"subject": subject, "digest": content, "ok": False, "seq": seq}
        kept = dict(sorted(mails.items(), key=lambda kv: int(kv[1]["seq"]))[-KEEP:])
        put_state(session, _key(chat), {"next": seq, "mails": kept})
        return _mail(mid, mails[mid])


def accepted(db: Database, chat: str, mid: str) -> None:
    """The server took the mail (250 after DATA)."""
    _set(db, chat, mid, True)


def forget(db: Database, chat: str, mid: str) -> None:
    """The mail certainly did not go (refused, never connected): nothing to look for."""
    _set(db, chat, mid, None)


def _set(db: Database, chat: str, mid: str, ok: bool | None) -> None:
    with db.session() as session:
        state = get_state(session, _key(chat))
        mails: dict[str, Any] = dict(state.get("mails", {}))
        if mid not in mails:
            return
        if ok is None:
            del mails[mid]
        else:
            mails[mid] = {**mails[mid], "ok": ok}
        put_state(session, _key(chat), {**state, "mails": mails})


def sent(db: Database, channel: str, chat: str, content: str, stored: bool = False) -> str | None:
    """The Message-ID of an accepted mail of this content; unless ``stored``, only one whose
    id the outbox has not stored yet (a post a crash cut short), the oldest first."""
    with db.session() as session:
        mails = get_state(session, _key(chat)).get("mails", {})
        found = [mid for mid, e in mails.items() if e["digest"] == content and e["ok"]]
        if found and not stored:
            known = session.exec(
                select(ChannelMessage.message_id).where(
                    ChannelMessage.channel == channel,
                    ChannelMessage.chat_id == chat,
                    col(ChannelMessage.message_id).in_(found),
                )
            ).all()
            found = [mid for mid in found if mid not in set(known)]
    return min(found, key=lambda mid: int(mails[mid]["seq"])) if found else None


def lookup(db: Database, chat: str, mid: str) -> Mail | None:
    """The entry of a mail Guard sent (to thread a follow-up under it)."""
    with db.session() as session:
        entry = get_state(session, _key(chat)).get("mails", {}).get(mid)
    return None if entry is None else _mail(mid, entry)
