"""Telegram's inbound adapter: an ``Update`` as a neutral ``guard.notify.inbound.Inbound``
event, which the answers handle once (``Inbound.handled``).

Telegram redelivers every update that ``getUpdates`` has not confirmed yet (the next poll's
``offset`` confirms it), and keeps an unconfirmed update for 24 hours. A press is answered at
once with ``answerCallbackQuery`` (at most 200 characters: cut to 190).
"""

from __future__ import annotations

from telegram import Update

from guard.notify.inbound import Inbound
from guard.notify.telegram.channel import NAME

ANSWER_CHARS = 190


def event(update: Update) -> Inbound:
    """What the update says a person did (a ``press``, a ``command``, or ``text``)."""
    q = update.callback_query
    if q is not None:  # the pressed message, and who pressed
        pressed = q.message

        async def answer(text: str, alert: bool) -> None:
            await q.answer(text[:ANSWER_CHARS], show_alert=alert)

        return Inbound(
            channel=NAME,
            update_id=update.update_id,
            kind="press",
            chat=str(pressed.chat.id) if pressed is not None else None,
            user=q.from_user.id,
            message_id=_id(pressed.message_id if pressed is not None else None),
            data=q.data or "",
            answer=answer,
        )
    msg = update.effective_message
    chat = update.effective_chat
    user = update.effective_user
    quoted = msg.reply_to_message if msg is not None else None
    first = msg.entities[0] if msg is not None and msg.entities else None
    command = first is not None and first.type == "bot_command" and first.offset == 0
    return Inbound(
        channel=NAME,
        update_id=update.update_id,
        kind="command" if command else "text",
        chat=str(chat.id) if chat is not None else None,
        user=user.id if user is not None else None,
        message_id=_id(msg.message_id if msg is not None else None),
        text=(msg.text or "") if msg is not None else "",
        reply_to=_id(quoted.message_id if quoted is not None else None),
    )


def _id(message_id: int | None) -> str | None:
    """Telegram's message ids are numbers; Guard's are strings."""
    return None if message_id is None else str(message_id)
