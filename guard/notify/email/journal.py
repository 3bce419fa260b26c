"""The mails Guard sent or is sending, per recipient: the Message-ID of each, generated and
committed before the SMTP exchange, and marked accepted when the server said 250.

SMTP has no way to ask a server "did you take this mail?", so the journal is what the outbox's
``find`` asks after a crash (``guard.notify.outbox.inflight``): a mail marked accepted was sent
(adopted, not sent again); one still unmarked may or may not have been (Guard died during the
exchange, or the connection broke after DATA), and is sent again with the same Message-ID, so
a receiving store or client that drops duplicate Message-IDs shows it once.

The number of an entry is the message id the outbox stores (one increasing sequence per
recipient, as the port's ids are today); the Message-ID header is the mail's real id. Kept in
the store's key/value state (``MonitorState``), the newest ``KEEP`` per recipient.
Tested by tests/notify/email/test_email_channel.py and tests/notify/email/test_email_run.py.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from email.utils import make_msgid
from typing import Any

from guard.store.db import Database
from guard.store.state import get_state, put_state

KEEP = 500


@dataclass(frozen=True)
class Mail:
    """One journal entry: the outbox's id for it, its Message-ID and subject."""

    number: int
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


def _mail(number: str, entry: dict[str, Any]) -> Mail:
    return Mail(int(number), str(entry["mid"]), str(entry["subject"]), bool(entry["ok"]))


def prepare(db: Database, chat: str, content: str, subject: str, domain: str) -> Mail:
    """The entry to send under: the unaccepted one of this content (a resend keeps its
    Message-ID), else a new one, committed before the exchange starts."""
    with db.session() as session:
        state = get_state(session, _key(chat))
        mails: dict[str, Any] = dict(state.get("mails", {}))
        for number, entry in mails.items():
            if entry["digest"] == content and not entry["ok"]:
                return _mail(number, entry)
        new = int(state.get("next", 0)) + 1
        entry = {"mid": make_msgid("guard", domain), "subject": subject, "digest": content}
        mails[str(new)] = {**entry, "ok": False}
        kept = dict(sorted(mails.items(), key=lambda kv: int(kv[0]))[-KEEP:])
        put_state(session, _key(chat), {"next": new, "mails": kept})
        return _mail(str(new), mails[str(new)])


def accepted(db: Database, chat: str, number: int) -> None:
    """The server took the mail (250 after DATA)."""
    _set(db, chat, number, True)


def forget(db: Database, chat: str, number: int) -> None:
    """The mail certainly did not go (refused, never connected): nothing to look for."""
    _set(db, chat, number, None)


def _set(db: Database, chat: str, number: int, ok: bool | None) -> None:
    with db.session() as session:
        state = get_state(session, _key(chat))
        mails: dict[str, Any] = dict(state.get("mails", {}))
        if str(number) not in mails:
            return
        if ok is None:
            del mails[str(number)]
        else:
            mails[str(number)] = {**mails[str(number)], "ok": ok}
        put_state(session, _key(chat), {**state, "mails": mails})


def sent(db: Database, chat: str, content: str, floor: int) -> int | None:
    """The number of an accepted mail of this content above ``floor``, if any."""
    with db.session() as session:
        mails = get_state(session, _key(chat)).get("mails", {})
    found = [
        int(n) for n, e in mails.items() if int(n) > floor and e["digest"] == content and e["ok"]
    ]
    return min(found) if found else None


def lookup(db: Database, chat: str, number: int) -> Mail | None:
    """The entry of a mail Guard sent (to thread a follow-up under it)."""
    with db.session() as session:
        entry = get_state(session, _key(chat)).get("mails", {}).get(str(number))
    return None if entry is None else _mail(str(number), entry)
