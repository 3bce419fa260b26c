"""Grouped incident messages on Telegram: the outbox's grouping (``guard.notify.outbox.grouping``)
bound to this channel, and the HTML of the lines (``markup``)."""

from __future__ import annotations

from sqlmodel import Session

from guard.notify.outbox import grouping as core
from guard.notify.outbox.grouping import MAX_BUTTONS, MAX_INCIDENTS, group_reply, is_ask, labelled
from guard.notify.telegram.channel import NAME
from guard.notify.telegram.markup import LINE_CHARS, closed_line, member_line, render
from guard.notify.telegram.messages import RUN_COMMAND
from guard.store.models import MessageGroupMember, OutboxMessage

__all__ = [
    "LINE_CHARS",
    "MAX_BUTTONS",
    "MAX_INCIDENTS",
    "batch",
    "closed_line",
    "group_reply",
    "is_ask",
    "labelled",
    "member",
    "member_line",
    "members_of",
    "offers_command",
    "render",
]


def batch(rows: list[OutboxMessage], first: OutboxMessage) -> list[OutboxMessage]:
    return core.batch(rows, first, RUN_COMMAND)


def offers_command(row: OutboxMessage) -> bool:
    return core.offers_command(row, RUN_COMMAND)


def members_of(session: Session, chat_id: str, message_id: str) -> list[MessageGroupMember]:
    return core.members_of(session, NAME, chat_id, message_id)


def member(session: Session, chat_id: str, incident_id: int) -> MessageGroupMember | None:
    return core.member(session, NAME, chat_id, incident_id)
