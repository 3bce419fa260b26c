"""Keep Telegram in step with the store, whoever changed it.

Every couple of seconds:
- a live incident message (one with working buttons) whose question is over, because the
  incident moved on (healed, answered from the CLI, auto-resolved) or its approvals expired,
  is edited to say so, and its buttons go away;
- the outcome of a Telegram-sent command that nobody else reports (a denied or muted incident,
  an approved skill that did not cure it, a fix that could not run) is posted in its thread.
  Healed incidents and learned fixes are reported by the agent through ``notifier.update``.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime
from typing import TYPE_CHECKING

from loguru import logger
from sqlmodel import Session, col, select

from guard.notify.telegram import grouping, outbox
from guard.notify.telegram.messages import cut, esc, pointer
from guard.records import utcnow
from guard.store.db import Database
from guard.store.models import Approval, HumanCommand, Incident, IncidentState, TelegramMessage
from guard.store.state import get_state, put_state

if TYPE_CHECKING:
    from guard.notify.telegram.gateway import TelegramGateway

EVERY = 1.0
ASKING = frozenset({IncidentState.awaiting_human.value, IncidentState.escalated.value})
REPORTED = "telegram:reported_command"


class Sync:
    def __init__(self, gateway: TelegramGateway) -> None:
        self.gw = gateway
        self.db: Database = gateway.db

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await asyncio.to_thread(self.once)
            except Exception as exc:
                logger.warning("telegram sync failed: {}", exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), EVERY)

    def once(self) -> None:
        self.close_finished_questions()
        self.report_commands()

    def close_finished_questions(self) -> None:
        now = utcnow()
        work: list[tuple[TelegramMessage | None, str, int, str, str]] = []
        with self.db.session() as session:
            live = session.exec(
                select(TelegramMessage).where(
                    col(TelegramMessage.live), TelegramMessage.role == "incident"
                )
            ).all()
            for msg in live:
                over = _over(session, msg.incident_id, msg.approvals, now)
                if over is not None and msg.incident_id is not None:
                    work.append((msg, msg.chat_id, msg.incident_id, *over))
            groups = session.exec(
                select(TelegramMessage).where(
                    col(TelegramMessage.live), TelegramMessage.role == "group"
                )
            ).all()
            for group in groups:
                for member in grouping.members_of(session, group.chat_id, group.message_id):
                    approvals = [
                        d for row in member.buttons for _, d in row if not str(d).startswith("fix:")
                    ]
                    over = (
                        _over(session, member.incident_id, approvals, now) if member.live else None
                    )
                    if over is not None:
                        member.live = False  # queued once: the edit below closes its line
                        session.add(member)
                        work.append((None, group.chat_id, member.incident_id, *over))
        for own, chat_id, incident_id, state, text in work:
            closed = self.gw.notifier.closed_text(incident_id, state, text)
            # queued only if nobody closed it meanwhile (a press, the agent's own report)
            outbox.close_question(
                self.db,
                chat_id=chat_id,
                incident_id=incident_id,
                text=closed,
                only_message=own.id if own else None,
            )

    def report_commands(self) -> None:
        with self.db.session() as session:
            last = int(get_state(session, REPORTED).get("id", 0))
            rows = session.exec(
                select(HumanCommand)
                .where(HumanCommand.channel == "telegram", col(HumanCommand.id) > last)
                .order_by(col(HumanCommand.id))
            ).all()
            done = []
            for cmd in rows:
                if cmd.status not in ("done", "failed"):
                    break
                done.append(cmd)
            if done:
                put_state(session, REPORTED, {"id": done[-1].id})
            learned = {}
            for c in done:
                inc = session.get(Incident, c.incident_id) if c.verb == "reply" else None
                learned[c.id] = inc.details if inc is not None else {}
        for cmd in done:
            reported_by_agent = (cmd.verb == "approve" and cmd.status == "done") or (
                cmd.verb == "reply"
                and cmd.outcome == (learned.get(cmd.id) or {}).get("learned_message")
            )
            if reported_by_agent:
                continue
            outbox.enqueue(
                self.db,
                method="send",
                chat_id=self.gw.chat_id,
                text=cut(
                    f"Incident #{cmd.incident_id}, {esc(cmd.verb)} by "
                    f"{esc(cmd.actor)}: {esc(cmd.outcome)}",
                    more=pointer(cmd.incident_id),
                ),
                incident_id=cmd.incident_id,
                role="reply",
                reply_to_incident=True,
            )


def _over(
    session: Session, incident_id: int | None, approvals: list[str], now: datetime
) -> tuple[str, str] | None:
    """``(state, text)`` if the question about an incident is over, else None."""
    inc = session.get(Incident, incident_id) if incident_id else None
    if inc is None or inc.state not in ASKING:
        return (inc.state if inc else "gone"), ("Handled outside this chat." if inc else "")
    valid = session.exec(
        select(Approval).where(
            col(Approval.id).in_(approvals or [""]),
            col(Approval.used_at).is_(None),
            col(Approval.expires_at) > now,
        )
    ).first()
    if valid is None:
        return "expired", (
            f"Nobody answered in time; the buttons are gone. Use /fix {inc.id} "
            f"COMMAND or guard approve|deny|reply {inc.id}."
        )
    return None
