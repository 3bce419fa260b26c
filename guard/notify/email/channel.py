"""Email as a ``Channel``: a post is one mail, an edit that closes a question is a short
follow-up in the same thread (``In-Reply-To``), since a sent mail cannot be changed.

Every mail's Message-ID is made and committed before the SMTP exchange (``journal``), and
marked once the server accepted it; ``find`` reads the journal, so a mail accepted before a
crash is adopted, not sent again (docs/CHANNELS.md, Email, says what a server sees in the worst
case). A "chat" is a recipient address. Tested by tests/notify/email/test_email_channel.py.
"""

from __future__ import annotations

import asyncio
from email.message import EmailMessage
from email.utils import formatdate

from loguru import logger

from guard.config.email import EmailSettings
from guard.notify.channel import Buttons, Post, Rejected, Retry, Unreachable
from guard.notify.email import journal, smtp
from guard.notify.email.markup import EmailMarkup
from guard.store.db import Database

NAME = "email"
SUBJECT_LIMIT = 120


def subject_of(text: str) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "Guard")
    return "[Guard] " + (first if len(first) <= SUBJECT_LIMIT else first[:SUBJECT_LIMIT] + "…")


class EmailChannel:
    name = NAME

    def __init__(self, settings: EmailSettings, db: Database) -> None:
        assert settings.from_ is not None
        self.settings = settings
        self.db = db
        self.markup = EmailMarkup()
        self.domain = settings.from_.rpartition("@")[2] or "guard.invalid"

    async def post(self, post: Post) -> str:
        parent = await self._parent(post.chat, post.reply_to)
        subject = f"Re: {parent.subject}" if parent else subject_of(post.text)
        content = journal.digest(post.text, post.photo, post.reply_to)
        mail = await asyncio.to_thread(
            journal.prepare, self.db, post.chat, content, subject, self.domain
        )
        message = self._message(post.chat, mail, post.text, post.photo, parent)
        await self._send(post.chat, mail, message)
        return mail.message_id

    async def edit(self, chat: str, message_id: str, text: str, buttons: Buttons) -> None:
        """A question that closed (no buttons left): a follow-up under its mail. One still
        open (its related line changed) sends nothing: the console shows it."""
        if buttons:
            return
        content = journal.digest("closed", message_id, text)
        if await asyncio.to_thread(journal.sent, self.db, NAME, chat, content, True):
            return  # the same follow-up again: already sent
        parent = await self._parent(chat, message_id)
        if parent is None:
            raise Rejected(f"no mail {message_id} to {chat} in the journal to follow up")
        mail = await asyncio.to_thread(
            journal.prepare, self.db, chat, content, f"Re: {parent.subject}", self.domain
        )
        await self._send(chat, mail, self._message(chat, mail, text, None, parent))

    async def find(self, post: Post, floor: int, known: int) -> str | None:
        """A mail of this content the server accepted and the outbox never stored (Message-IDs
        have no order: ``floor`` and ``known`` say nothing here)."""
        content = journal.digest(post.text, post.photo, post.reply_to)
        return await asyncio.to_thread(journal.sent, self.db, NAME, post.chat, content)

    async def _parent(self, chat: str, message_id: str | None) -> journal.Mail | None:
        """The mail a reply or a follow-up threads under."""
        if message_id is None:
            return None
        return await asyncio.to_thread(journal.lookup, self.db, chat, message_id)

    def _message(
        self,
        to: str,
        mail: journal.Mail,
        text: str,
        photo: bytes | None,
        parent: journal.Mail | None,
    ) -> EmailMessage:
        assert self.settings.from_ is not None
        message = EmailMessage()
        message["From"] = self.settings.from_
        message["To"] = to
        message["Subject"] = mail.subject
        message["Date"] = formatdate(localtime=False)
        message["Message-ID"] = mail.message_id
        if parent is not None:
            message["In-Reply-To"] = parent.message_id
            message["References"] = parent.message_id
        message.set_content(text)
        if photo:
            message.add_attachment(
                photo, maintype="image", subtype="png", filename="incidents-per-hour.png"
            )
        return message

    async def _send(self, chat: str, mail: journal.Mail, message: EmailMessage) -> None:
        try:
            await asyncio.to_thread(smtp.send, self.settings, message, chat)
        except Unreachable as exc:
            if not exc.uncertain:
                await asyncio.to_thread(journal.forget, self.db, chat, mail.message_id)
            raise
        except (Rejected, Retry):
            await asyncio.to_thread(journal.forget, self.db, chat, mail.message_id)
            raise
        await asyncio.to_thread(journal.accepted, self.db, chat, mail.message_id)
        logger.info("email: {} accepted for {}", mail.message_id, chat)
