"""Conversation memory: every message exchanged with a human, per chat, in the SQL store."""

from __future__ import annotations

from typing import Any

from sqlmodel import col, select

from guard.store.db import Database
from guard.store.models import ConversationMessage


def record_message(
    db: Database,
    *,
    chat: str,
    direction: str,
    author: str,
    text: str,
    incident_id: int | None = None,
    **meta: Any,
) -> None:
    with db.session() as session:
        session.add(
            ConversationMessage(
                chat=chat,
                direction=direction,
                author=author,
                text=text,
                incident_id=incident_id,
                meta=meta,
            )
        )


def history(db: Database, chat: str, limit: int = 50) -> list[ConversationMessage]:
    with db.session() as session:
        rows = session.exec(
            select(ConversationMessage)
            .where(ConversationMessage.chat == chat)
            .order_by(col(ConversationMessage.id).desc())
            .limit(limit)
        ).all()
    return list(reversed(rows))
